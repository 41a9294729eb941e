"""Attention, softmax(q k^T / sqrt(D)) v over B x H heads of N x D, every key visible.

The online softmax of lesson 10 over tiles of keys, each tile a product of lesson 12's: no
N x N matrix of scores need ever be written.

**Causal or not.** A case is an op, a shape and a dtype (``learning.bench.config.select``), and
a shape is a tuple of positive integers that every tool reads as sizes (``B x H x N x D``). So
the mask is part of the op: ``attention`` (every key visible) and ``attention_causal`` (query
``i`` sees keys ``0..i``) are two ops, and the training step two more. Each causal op is this
definition with ``causal=True`` among its inputs and half the FLOPs; both call the same
``attention(q, k, v, causal)`` and are graded by one exercise, as ``sum`` and ``max`` share
``reductions``. A flag in the shape would make every shape tool learn a dimension that is not
a size; a flag in the run settings would let one op's cases mean two computations.

**The oracle** is the textbook formula in float64, one block of query rows at a time: each
row's softmax needs that row's scores only, so the blocks give the same numbers as one
product, and no step holds more than ``_ORACLE_SCORES`` scores. Under autograd (the training
ops) each block is recomputed in the backward (:class:`_Recomputed`), so the graph keeps the
inputs and not the blocks' scores: a training oracle at 1 x 16 x 16384 x 128 would otherwise
keep several float64 N x N matrices (34 GB each) for its backward.

**Tolerances** are the GEMM's, forward and gradients. A 16-bit kernel rounds the
probabilities P to 16 bits before ``P v`` (the tensor cores take 16-bit operands), and in the
backward P again and ``dS``: each term then carries a relative error of up to 2^-11 (fp16) or
2^-8 (bf16) before the fp32 sum, as a GEMM's inputs do, and each output is rounded once, as
a GEMM's is. A row's terms round independently, so their errors add in quadrature: emulated,
these roundings use at most 0.19 of the bounds at N = 257 and 300, and would not fit bounds
8x tighter (``tests/learning/test_ops_attention.py``). Tighter bounds would reject a kernel
for the roundings the tensor cores force on it (SDPA's fused backends round P so too), and
Triton's interpreter, whose bf16 products the kernels take through fp32, needs the room too.
"""

from __future__ import annotations

import math
import types
import warnings
from types import MappingProxyType

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

from learning.ops.spec import FORWARD_TOLERANCES, OpSpec, generator, itemsize, randn

HEADS = ("B", "H", "N", "D")
SHAPES = (
    (4, 32, 4096, 128),
    (8, 16, 2048, 64),
    (1, 16, 16384, 128),  # one long sequence: few heads, many tiles of keys per program
    (4, 16, 3000, 128),  # irregular: N a multiple of no block (the last tiles are masked)
)
CPU_SHAPES = ((1, 2, 67, 64), (2, 1, 129, 128))  # N past a block by 3 and by 1
DTYPES = (torch.float16, torch.bfloat16)  # fp32 attention has no tensor-core backend to beat
_ORACLE_SCORES = 2**26  # float64 scores one oracle block may hold (512 MiB)


def make_inputs(shape, dtype, seed, device, causal=False):
    """q, k and v of unit variance: the scores ``q k^T / sqrt(D)`` then have unit variance
    too, the regime of a trained model's attention before it sharpens."""
    source = generator(seed, device)
    q, k, v = (randn(shape, dtype, source, device) for _ in "qkv")
    return {"q": q, "k": k, "v": v, "causal": causal}


def _attend(q, k, v, first_row: int, causal: bool):
    """Rows ``first_row..`` of the output: the scores of these query rows, their softmax, V."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        rows = torch.arange(first_row, first_row + q.shape[-2], device=q.device)
        keys = torch.arange(k.shape[-2], device=q.device)
        scores = scores.masked_fill(keys[None, :] > rows[:, None], float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


class _Recomputed(torch.autograd.Function):
    """One block of :func:`_attend` that keeps only its inputs: the backward runs the block
    again under autograd and differentiates that, so no block's scores outlive its own step.
    (Activation checkpointing does the same, but its first call imports ``torch._dynamo``,
    which replaces ``torch.manual_seed`` mid-run: kernel-bench would report the run tampered.)"""

    @staticmethod
    def forward(ctx, q, k, v, first_row, causal):
        ctx.save_for_backward(q, k, v)
        ctx.first_row, ctx.causal = first_row, causal
        return _attend(q, k, v, first_row, causal)

    @staticmethod
    def backward(ctx, grad):
        inputs = [t.detach().requires_grad_(t.requires_grad) for t in ctx.saved_tensors]
        with torch.enable_grad():
            out = _attend(*inputs, ctx.first_row, ctx.causal)
        wanted = [t for t in inputs if t.requires_grad]
        found = iter(torch.autograd.grad(out, wanted, grad))
        return (*(next(found) if t.requires_grad else None for t in inputs), None, None)


def oracle(q, k, v, causal):
    batch, heads, n, _ = q.shape
    rows = max(1, _ORACLE_SCORES // (batch * heads * n))
    blocks = []
    for first in range(0, n, rows):
        block = q[..., first : first + rows, :]
        if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
            blocks.append(_Recomputed.apply(block, k, v, first, causal))
        else:
            blocks.append(_attend(block, k, v, first, causal))
    return torch.cat(blocks, dim=-2)


class BackendRefused(RuntimeError):
    """An SDPA backend that has no kernel for a case (a dtype, a head size, a device): a case
    it cannot take, not a wrong answer. Its message is one line, with torch's reasons."""


def _sdpa(backend: SDPBackend):
    """``F.scaled_dot_product_attention`` held to one backend. Where that backend cannot take a
    case, torch raises "No viable backend" and gives its reasons only as warnings; the call is
    then made again to collect them, and :class:`BackendRefused` raised with them."""

    def call(q, k, v, causal):
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def baseline(q, k, v, causal):
        try:
            return call(q, k, v, causal)
        except RuntimeError as error:
            if "No viable backend" not in str(error):
                raise
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                call(q, k, v, causal)
            except RuntimeError:
                pass
        reasons = [" ".join(str(w.message).split()) for w in caught]
        device = f"{q.device.type} {str(q.dtype).removeprefix('torch.')} tensors"
        raise BackendRefused(
            f"SDPA's {backend.name} backend refused {device} of shape {tuple(q.shape)}: "
            + ("; ".join(reasons) if reasons else "torch gave no reason")
        ) from None

    baseline.__name__ = f"sdpa_{backend.name.lower()}"
    return baseline


def _causal(batch, head, query, key):  # FlexAttention's mask_mod: which keys a query sees
    return query >= key


_MASKS: dict = {}  # (N, device) -> the causal BlockMask, built once


def _causal_blocks(n: int, device):
    """The causal block mask for N queries and keys, built on first use and kept: a model
    builds it once and shares it between layers, so no call is charged for building it.
    :func:`flex` hides it from ``torch.compile`` (``torch.compiler.disable``) before its first
    compile: decorating it here would import ``torch._dynamo`` (about 1.5 s of CPU) in every
    process that imports the ops, the checker's and kernel-bench's on a CPU included."""
    key = (n, str(device))
    if key not in _MASKS:
        _MASKS[key] = create_block_mask(_causal, None, None, n, n, device=device)
    return _MASKS[key]


def _flex(q, k, v, causal):
    return flex_attention(
        q, k, v, block_mask=_causal_blocks(q.shape[-2], q.device) if causal else None
    )


_COMPILED: dict = {}  # (shape, dtype, causal, device, training) -> its compiled FlexAttention


def flex(q, k, v, causal):
    """FlexAttention, PyTorch's attention that ``torch.compile`` turns into one fused Triton
    kernel, compiled for each case alone (``dynamic=False``, on a private copy of the code, so
    no case recompiles another's); the first call of a case compiles it, before any timing.
    The causal mask is a block mask, so, as in the reference kernel, whole tiles above the
    diagonal are skipped, not masked. On the CPU it refuses: Inductor would build C++ for
    minutes a case, and its attention there has no backward."""
    if q.device.type != "cuda":
        raise BackendRefused(f"FlexAttention is timed on CUDA devices only, not on {q.device.type}")
    key = (tuple(q.shape), q.dtype, bool(causal), str(q.device), torch.is_grad_enabled())
    if key not in _COMPILED:
        global _causal_blocks
        if not hasattr(_causal_blocks, "_torchdynamo_disable"):  # compiling imports dynamo
            _causal_blocks = torch.compiler.disable(_causal_blocks)
        code = types.FunctionType(_flex.__code__.replace(), _flex.__globals__, "flex_attention")
        _COMPILED[key] = torch.compile(code, dynamic=False)
    return _COMPILED[key](q, k, v, causal)


MATH_SCORES_BYTES = 2**30  # the largest N x N matrix of scores the math backend is given


def _math(q, k, v, causal):
    """SDPA's math backend, the textbook three steps, below a size. It writes the scores and
    the probabilities, each ``B x H x N x N`` (and under autograd keeps them for the backward),
    and kernel-bench keeps every case's CUDA graphs, with the memory they were captured with,
    for the whole run: at 4 x 32 x 4096 x 128 bf16 one matrix is 4 GiB, and the four
    head-dim-128 cases of one sweep held 72 GiB of an H100's 79 before the causal cases could
    start. Above :data:`MATH_SCORES_BYTES` a matrix, it refuses; its rate at the sizes it
    takes (15-25 TFLOP/s) is the point it makes."""
    batch, heads, n, _ = q.shape
    scores = batch * heads * n * k.shape[-2] * q.element_size()
    if scores > MATH_SCORES_BYTES:
        raise BackendRefused(
            f"SDPA's MATH backend is not run at shape {tuple(q.shape)}: its N x N scores would "
            f"take {scores / 2**30:.1f} GiB (the limit is {MATH_SCORES_BYTES / 2**30:.0f} GiB), "
            "held with every other case's CUDA graphs for the whole run"
        )
    return _math_sdpa(q, k, v, causal)


_math_sdpa = _sdpa(SDPBackend.MATH)
_math.__name__ = _math_sdpa.__name__

# The first is the one every ratio divides by: FlashAttention-2, the kernel to match.
BASELINES = MappingProxyType(
    {
        "sdpa_flash": _sdpa(SDPBackend.FLASH_ATTENTION),
        "sdpa_cudnn": _sdpa(SDPBackend.CUDNN_ATTENTION),
        "sdpa_efficient": _sdpa(SDPBackend.EFFICIENT_ATTENTION),
        "sdpa_math": _math,
        "flex_attention": flex,
    }
)


def logical_bytes(shape, dtype):  # read q, k, v, write o
    return 4 * math.prod(shape) * itemsize(dtype)


def flops(shape):  # two products of N x N x D a head: q k^T and P v
    batch, heads, n, d = shape
    return 4 * batch * heads * n * n * d


SPEC = OpSpec(
    name="attention",
    shape_names=HEADS,
    default_shapes=SHAPES,
    cpu_shapes=CPU_SHAPES,
    module="kernels.attention",
    function="attention",
    make_inputs=make_inputs,
    oracle=oracle,
    baselines=BASELINES,
    logical_bytes=logical_bytes,
    flops=flops,
    tolerances=FORWARD_TOLERANCES,
    exercise="attention",
    dtypes=DTYPES,
)
