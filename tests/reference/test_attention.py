"""Does the reference attention kernel compute softmax(q k^T / sqrt(D)) v and its gradients as
the float64 oracle does, save the log-sum-exp in fp32, skip the tiles above the causal
diagonal, and never allocate an N x N tensor? And can each of these tests fail?

On a CPU every kernel runs through Triton's interpreter, with its small tiles (32 query rows,
16 keys; 32 keys a dk/dv program), so that N = 67 and 129 cross several tiles, the diagonal
and a ragged tail. The interpreter computes bf16 products wrongly, so correctness is checked
in fp32 and fp16, and bf16 once, through the kernel's upcast path. About 40 s on two cores.
"""

from __future__ import annotations

# isort: off
import math
import sys
from collections import Counter, defaultdict
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import learning  # noqa: F401  (chooses the interpreter before triton is imported)
from learning import correctness, ops
from learning.runtime import default_device, interpreting
from reference.kernels import attention as attention_module

from triton.runtime import interpreter  # after learning: the backend is chosen first

# isort: on

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from _variants import rewritten  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore:Conversion of an array with ndim > 0:DeprecationWarning"),
    pytest.mark.skipif(not interpreting(), reason="reads the interpreter's loads and tiles"),
]

DEVICE = default_device()
FORWARD, TRAINING = ops.get("attention"), ops.get("attention_train")  # tolerances, oracle
SHAPES = ops.get("attention").cpu_shapes  # (1, 2, 67, 64), (2, 1, 129, 128): ragged N, both D
TILES = attention_module.plan(64, torch.float32)  # the interpreter's tiles, whatever D


def _inputs(shape, dtype, seed: int, causal: bool) -> dict:
    return {**TRAINING.inputs(shape, dtype, seed, DEVICE), "causal": causal}


def _oracle_lse(q, k, causal: bool) -> torch.Tensor:
    """The log-sum-exp of each row's scaled scores, in float64."""
    q, k = q.detach().double(), k.detach().double()
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[-2]
        scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    return torch.logsumexp(scores, dim=-1)


def _failures(module, shape, dtype, seed: int, causal: bool) -> list[str]:
    """What differs from the float64 oracle when ``module.attention`` runs forward and
    backward on one case: the output, the three gradients (the course's tolerances for the
    dtype) and the saved log-sum-exp (fp32, within 1e-5 of its size)."""
    inputs = _inputs(shape, dtype, seed, causal)
    q, k, v, grad_o = (inputs[name] for name in ("q", "k", "v", "grad_output"))
    out = module.attention(q, k, v, causal=causal)
    saved = [t for t in out.grad_fn.saved_tensors if t.shape == q.shape[:-1]]
    grads = torch.autograd.grad(out, (q, k, v), grad_o)
    expected = TRAINING.expected(inputs)
    with torch.no_grad():
        expected_out = FORWARD.oracle(q.double(), k.double(), v.double(), causal)
    verdicts = [
        *correctness.compare_all((out.detach(),), (expected_out,), FORWARD.tolerances[dtype],
                                 dtype=dtype, labels=("o",)),
        *correctness.compare_all(grads, expected, TRAINING.tolerances[dtype], dtype=dtype,
                                 labels=("dq", "dk", "dv")),
    ]  # fmt: skip
    failures = [v.reason for v in verdicts if not v.passed]
    if len(saved) != 1 or saved[0].dtype != torch.float32:
        failures.append(f"saved {[(t.dtype, tuple(t.shape)) for t in saved]}, not one fp32 lse")
    else:
        lse, want = saved[0].double(), _oracle_lse(q, k, causal)
        worst = float((lse - want).abs().max())
        if worst > 1e-5 * float(want.abs().max()):
            failures.append(f"saved lse is {worst:.2e} from the oracle's")
    return failures


# --------------------------------------------------------------------------- against the oracle


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=ops.dtype_name)
@pytest.mark.parametrize("shape", SHAPES, ids=FORWARD.shape_label)
def test_forward_backward_and_saved_lse_match_the_oracle(shape, dtype, causal):
    """Do o, dq, dk, dv and the saved log-sum-exp match float64 on ragged N at D = 64, 128?"""
    assert shape[2] % TILES.forward.block_n and shape[2] % TILES.dkdv.block_n  # ragged
    failures = _failures(attention_module, shape, dtype, seed=11, causal=causal)
    assert not failures, f"{shape} {dtype} causal={causal}: {failures}"


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_bfloat16_matches_the_oracle_through_the_upcast(causal):
    """bf16 runs the kernel's DOT_IN_FP32 path here (the interpreter's bf16 dot is wrong)."""
    failures = _failures(attention_module, SHAPES[0], torch.bfloat16, seed=12, causal=causal)
    assert not failures, failures


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_cs336_cases(causal):
    """Stanford CS336's FlashAttention-2 cases, as the course's own: batch 4, 128 queries by 128
    keys, D = 64, causal and not, the log-sum-exp saved for the backward (fp32 here)."""
    failures = _failures(attention_module, (4, 1, 128, 64), torch.float32, seed=13, causal=causal)
    assert not failures, failures


def test_strided_inputs_read_in_place():
    """q, k, v as views of B x N x H x D memory (a projection's layout): the same output and
    gradients as the oracle's."""
    source = torch.Generator().manual_seed(5)
    leaves = [torch.randn((1, 40, 2, 64), generator=source).requires_grad_() for _ in "qkv"]
    grad_o = torch.randn((1, 2, 40, 64), generator=source)
    views = [leaf.transpose(1, 2) for leaf in leaves]
    assert not views[0].is_contiguous()
    out = attention_module.attention(*views, causal=True)
    got = (out, *torch.autograd.grad(out, leaves, grad_o))
    leaves64 = [leaf.detach().double().requires_grad_() for leaf in leaves]
    out64 = FORWARD.oracle(*(leaf.transpose(1, 2) for leaf in leaves64), True)
    want = (out64, *torch.autograd.grad(out64, leaves64, grad_o.double()))
    tolerances = (FORWARD.tolerances[torch.float32], *[TRAINING.tolerances[torch.float32]] * 3)
    for label, a, b, tolerance in zip(("o", "dq", "dk", "dv"), got, want, tolerances, strict=True):
        verdict = correctness.compare(a.detach(), b.detach(), tolerance, dtype=torch.float32)
        assert verdict.passed, f"{label}: {verdict.reason}"


def test_bad_inputs_are_refused_in_one_line():
    q = torch.zeros((1, 1, 8, 64))
    with pytest.raises(ValueError, match="head dimension 32"):
        attention_module.attention(q[..., :32], q[..., :32], q[..., :32])
    with pytest.raises(ValueError, match="one shape"):
        attention_module.attention(q, q[:, :, :4], q)
    with pytest.raises(TypeError, match="one dtype"):
        attention_module.attention(q, q.half(), q)
    with pytest.raises(ValueError, match="B x H x N x D"):
        attention_module.attention(q[0], q[0], q[0])


# --------------------------------------------------------------------------- the tiles visited


@contextmanager
def rows_loaded(tensors: dict[str, torch.Tensor]):
    """``loads[(kernel, program, name)][row]``: how many load instructions of each launched
    program touched row ``row`` (the index along N) of each named B x H x N x D tensor.

    The interpreter runs each program in turn, and every load goes through its builder's
    ``create_masked_load``; the lanes a mask turns off are not read, so they are not counted."""
    loads: dict[tuple, Counter] = defaultdict(Counter)
    builder = interpreter.interpreter_builder
    launch, load = interpreter.GridExecutor.__call__, builder.create_masked_load
    current = {"kernel": None}
    spans = {name: (t.data_ptr(), t.data_ptr() + t.untyped_storage().nbytes(), t)
             for name, t in tensors.items()}  # fmt: skip

    def watched_launch(self, *args, **kwargs):
        current["kernel"] = self.fn.__name__
        return launch(self, *args, **kwargs)

    def watched_load(ptrs, mask, *rest, **options):
        addresses = np.asarray(ptrs.data)
        if mask is not None:
            addresses = addresses[np.broadcast_to(np.asarray(mask.data, dtype=bool),
                                                  addresses.shape)]  # fmt: skip
        program = tuple(int(i) for i in builder.grid_idx[:2])
        for name, (start, stop, tensor) in spans.items():
            inside = addresses[(addresses >= start) & (addresses < stop)]
            if inside.size:
                elements = (inside - start) // tensor.element_size()
                rows = set(((elements // tensor.stride(2)) % tensor.shape[2]).tolist())
                loads[(current["kernel"], program, name)].update(rows)
        return load(ptrs, mask, *rest, **options)

    own = vars(builder).get("create_masked_load")  # an instance attribute someone set, if any
    interpreter.GridExecutor.__call__ = watched_launch
    builder.create_masked_load = watched_load
    try:
        yield loads
    finally:
        interpreter.GridExecutor.__call__ = launch
        if own is None:
            del builder.create_masked_load  # the class's own method again
        else:
            builder.create_masked_load = own


def _visits(module, n: int, causal: bool) -> dict[tuple, Counter]:
    """Rows of k, v, q and dO each program of the three kernels loaded, forward and backward."""
    inputs = _inputs((1, 2, n, 64), torch.float32, 7, causal)
    q, k, v, grad_o = (inputs[name] for name in ("q", "k", "v", "grad_output"))
    with rows_loaded({"q": q, "k": k, "v": v, "dO": grad_o}) as loads:
        out = module.attention(q, k, v, causal=causal)
        torch.autograd.grad(out, (q, k, v), grad_o)
    return loads


def _unexpected_visits(loads: dict[tuple, Counter], n: int, causal: bool) -> list[str]:
    """Each program must load exactly the rows it needs, each once: a forward or dq program of
    query block m the keys up to its last row (all of them when not causal); a dk/dv program
    of key block j the query rows from its first key on (all of them when not causal)."""
    plan = TILES
    wanted: dict[tuple, range] = {}
    for head in range(2):
        for block in range(math.ceil(n / plan.forward.block_m)):
            stop = min(n, (block + 1) * plan.forward.block_m) if causal else n
            for kernel in ("_attention_fwd_kernel", "_attention_bwd_dq_kernel"):
                for name in ("k", "v"):
                    wanted[(kernel, (block, head), name)] = range(stop)
        for block in range(math.ceil(n / plan.dkdv.block_n)):
            start = block * plan.dkdv.block_n if causal else 0
            for name in ("q", "dO"):
                wanted[("_attention_bwd_dkdv_kernel", (block, head), name)] = range(start, n)
    problems = []
    for key, rows in wanted.items():
        seen = loads.get(key, Counter())
        if set(seen) != set(rows) or any(count != 1 for count in seen.values()):
            extra = sorted(set(seen) - set(rows))
            again = sorted(row for row, count in seen.items() if count > 1)
            missing = sorted(set(rows) - set(seen))
            problems.append(f"{key}: {len(extra)} rows past the need ({extra[:4]}...), "
                            f"{len(again)} loaded twice, {len(missing)} never")  # fmt: skip
    return problems


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_each_program_loads_the_tiles_it_needs_once(causal):
    """Does a causal program stop at the diagonal (forward, dq) or start there (dk/dv), and does
    every program read each row of k, v (or q, dO) once, not once per use?"""
    n = 67
    assert not _unexpected_visits(_visits(attention_module, n, causal), n, causal)


# A causal kernel that masks the tiles above the diagonal instead of skipping them: every key
# in the masked walk. Its outputs are right; only the tiles it loads show the waste.
MASKED_NOT_SKIPPED = [
    ("        whole_stop = first_row  # every key before the block is visible to all its rows\n"
     "        masked_stop = tl.minimum(first_row + BLOCK_M, n)  # the diagonal tiles\n",
     "        whole_stop = 0\n        masked_stop = n\n", 1),
]  # fmt: skip


def test_a_causal_kernel_that_masks_instead_of_skipping_is_caught(tmp_path):
    """The count above fails a forward that walks every key tile and masks the triangle,
    though that kernel passes the oracle."""
    masked = rewritten(attention_module, MASKED_NOT_SKIPPED, tmp_path, "attention_masked")
    n = 67
    assert not _failures(masked, (1, 2, n, 64), torch.float32, seed=3, causal=True)
    problems = _unexpected_visits(_visits(masked, n, True), n, True)
    assert problems and all("_attention_fwd_kernel" in p and "rows past the need" in p
                            for p in problems)  # fmt: skip


# --------------------------------------------------------------------------- no N x N tensor


class _Allocations(TorchDispatchMode):
    """The largest tensor, in bytes, any torch operation returned while active, and the
    operation (bytes: the interpreter moves each argument's storage as a uint8 tensor)."""

    def __init__(self):
        super().__init__()
        self.largest = (0, None)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        for value in result if isinstance(result, tuple | list) else (result,):
            if isinstance(value, torch.Tensor):
                size = value.numel() * value.element_size()
                if size > self.largest[0]:
                    self.largest = (size, str(func))
        return result


def _largest_allocation(fn, n: int) -> tuple[int, str | None]:
    """The largest tensor, in bytes, made by a forward and backward of ``fn`` on fp32
    1 x 1 x n x 64: at n = 200 an N x N matrix even of 16-bit values (80000 bytes) is larger
    than q, k, v, o or a gradient (51200)."""
    inputs = _inputs((1, 1, n, 64), torch.float32, 9, causal=False)
    q, k, v, grad_o = (inputs[name] for name in ("q", "k", "v", "grad_output"))
    with _Allocations() as allocations:
        out = fn(q, k, v, False)
        torch.autograd.grad(out, (q, k, v), grad_o)
    return allocations.largest


def test_no_n_by_n_tensor_is_allocated():
    """Forward and backward make no tensor of N x N elements, and the same watch sees the
    textbook formula's scores."""
    n = 200
    size, what = _largest_allocation(attention_module.attention, n)
    assert size < 2 * n * n, f"{what} made a tensor of {size} bytes"
    size, what = _largest_allocation(FORWARD.oracle, n)
    assert size >= 2 * n * n, "the watch missed the oracle's N x N scores"


# --------------------------------------------------------------------------- typical mistakes


MISTAKES = {
    "the running output not rescaled when the maximum grows": (
        [("        acc = acc * rescale[:, None]\n", "", 1)], False),
    "the softmax scale left out": (
        [("        LOG2E.value / math.sqrt(head_dim),\n", "        LOG2E.value,\n", 1)], False),
    "the causal mask off by one": (
        [("                visible = visible & (keys[None, :] <= rows[:, None])\n",
          "                visible = visible & (keys[None, :] < rows[:, None])\n", 2)],
        True),
    "the log-sum-exp saved in 16 bits": (
        [("    tl.store(lse_ptr + head_rows, (row_max + tl.log2(row_sum)) * LN2,\n",
          "    tl.store(lse_ptr + head_rows, ((row_max + tl.log2(row_sum)) * LN2).to(tl.float16),"
          "\n", 1)], False),
    "the backward without D_i = rowsum(dO * o)": (
        [("        ds = p * (dp - delta[:, None])\n", "        ds = p * dp\n", 1),
         ("        ds_t = p_t * (dp_t - delta[None, :])\n", "        ds_t = p_t * dp_t\n", 1)],
        False),
}  # fmt: skip


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # the NaNs
@pytest.mark.parametrize("mistake", MISTAKES)
def test_a_typical_mistake_fails_the_oracle_checks(mistake, tmp_path):
    """Do the checks above fail a kernel with each of the usual mistakes (fp16, where the
    log-sum-exp's rounding matters)?"""
    rewrites, causal = MISTAKES[mistake]
    broken = rewritten(attention_module, rewrites, tmp_path, "attention_broken")
    assert _failures(broken, (1, 2, 67, 64), torch.float16, seed=4, causal=causal)
