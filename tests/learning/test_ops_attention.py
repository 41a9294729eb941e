"""Do the attention ops say what attention is: their shapes, inputs, bytes and FLOPs, an oracle
that is SDPA's formula in float64 (in blocks or not), tolerances that a 16-bit kernel's
roundings fit and not much more, and baselines that either match the oracle or refuse a case
in one line? (CPU, a few seconds.)"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import learning.ops.attention as definition
from learning import correctness, ops

NAMES = ("attention", "attention_causal", "attention_train", "attention_causal_train")
SPECS = [ops.get(name) for name in NAMES]
CAUSAL = {"attention": False, "attention_causal": True, "attention_train": False,
          "attention_causal_train": True}  # fmt: skip


def test_two_groups_index_the_four_ops_and_no_recorded_sweep_gains_them():
    assert ops.GROUPS["attention_forward"] + ops.GROUPS["attention_training"] == NAMES
    assert not set(NAMES) & {*ops.GROUPS["all"], *ops.GROUPS["training"]}
    assert [spec.name for spec in ops.resolve("attention")] == ["attention"]  # the op alone
    assert not set(ops.GROUPS) & set(ops.NAMES)  # no group shadows an op
    exercises = ops.exercises()
    assert [s.name for s in exercises["attention"]] == ["attention", "attention_causal"]
    assert [s.name for s in exercises["attention_train"]] == list(NAMES[2:])


@pytest.mark.parametrize("spec", SPECS, ids=NAMES)
def test_shapes_validate_cover_both_head_dims_and_a_ragged_n(spec):
    assert spec.shape_names == ("B", "H", "N", "D")
    for shapes in (spec.default_shapes, spec.cpu_shapes):
        assert [spec.validate_shape(s) for s in shapes] == list(shapes)
        assert {d for *_, d in shapes} == {64, 128}
    # N a multiple of no tile: every CPU shape (the interpreter's tiles are 16 and 32), and
    # one default shape (the GPU's are 32 to 128)
    assert all(n % 16 for _, _, n, _ in spec.cpu_shapes)
    assert any(n % 32 for _, _, n, _ in spec.default_shapes)
    assert spec.dtypes == (torch.float16, torch.bfloat16)
    with pytest.raises(ValueError, match="4 dimensions"):
        spec.validate_shape((64, 64, 64))
    with pytest.raises(ValueError, match="N must be a positive integer"):
        spec.validate_shape((1, 1, 0, 64))


@pytest.mark.parametrize("spec", SPECS, ids=NAMES)
def test_inputs_carry_the_mask_and_the_training_gradient(spec):
    shape = spec.cpu_shapes[0]
    inputs = spec.inputs(shape, torch.float16, seed=1)
    assert inputs["causal"] is CAUSAL[spec.name]
    for name in "qkv":
        assert inputs[name].shape == shape and inputs[name].dtype == torch.float16
        assert inputs[name].requires_grad == spec.training
    assert ("grad_output" in inputs) == spec.training
    assert not torch.equal(inputs["q"], inputs["k"])
    assert torch.equal(spec.inputs(shape, torch.float16, seed=1)["v"], inputs["v"])


def test_bytes_and_flops():
    shape = (4, 32, 4096, 128)
    elements, rows = 4 * 32 * 4096 * 128, 4 * 32 * 4096
    forward = 4 * 4 * 32 * 4096 * 4096 * 128  # q k^T and P v, 2 N^2 D FLOPs each, a head
    got = {spec.name: (spec.logical_bytes(shape, torch.bfloat16), spec.flops(shape))
           for spec in SPECS}  # fmt: skip
    assert got == {
        "attention": (4 * elements * 2, forward),  # read q, k, v, write o
        "attention_causal": (4 * elements * 2, forward // 2),
        # + the fp32 lse written and read; the backward reads q, k, v, o, dO, writes dq, dk, dv
        "attention_train": (12 * elements * 2 + 2 * rows * 4, 5 * forward // 2),
        "attention_causal_train": (12 * elements * 2 + 2 * rows * 4, 5 * forward // 4),
    }
    assert ops.get("attention").logical_bytes(shape, torch.float32) == 4 * elements * 4


def _as_leaves(inputs: dict) -> tuple[torch.Tensor, ...]:
    return tuple(inputs[n].detach().double().requires_grad_() for n in "qkv")


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_the_oracle_is_sdpa_in_float64_forward_and_backward(causal):
    inputs = definition.make_inputs((2, 3, 37, 64), torch.float32, 5, "cpu")
    grad = torch.randn((2, 3, 37, 64), dtype=torch.float64)
    mine, theirs = _as_leaves(inputs), _as_leaves(inputs)
    out = definition.oracle(*mine, causal)
    reference = F.scaled_dot_product_attention(*theirs, is_causal=causal)
    assert torch.allclose(out, reference, rtol=0, atol=1e-12)
    for a, b in zip(torch.autograd.grad(out, mine, grad),
                    torch.autograd.grad(reference, theirs, grad), strict=True):  # fmt: skip
        assert torch.allclose(a, b, rtol=0, atol=1e-12)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_the_oracle_in_blocks_of_query_rows_gives_the_same_numbers(causal, monkeypatch):
    """A long sequence's oracle holds a block of query rows' scores at a time (checkpointed
    under autograd): with blocks of 5 rows it must give what one block gives."""
    inputs = definition.make_inputs((1, 2, 23, 64), torch.float32, 6, "cpu")
    grad = torch.randn((1, 2, 23, 64), dtype=torch.float64)
    whole = _as_leaves(inputs)
    out = definition.oracle(*whole, causal)
    monkeypatch.setattr(definition, "_ORACLE_SCORES", 2 * 23 * 5)  # 5 query rows a block
    blocked = _as_leaves(inputs)
    out_blocked = definition.oracle(*blocked, causal)
    assert torch.allclose(out, out_blocked, rtol=0, atol=1e-14)
    for a, b in zip(torch.autograd.grad(out, whole, grad),
                    torch.autograd.grad(out_blocked, blocked, grad), strict=True):  # fmt: skip
        assert torch.allclose(a, b, rtol=0, atol=1e-14)


def _sixteen_bit_kernel(q, k, v, grad_o, causal: bool, dtype: torch.dtype):
    """What a compiled 16-bit kernel computes, roundings included: exact products of 16-bit
    operands summed in fp32, P rounded to 16 bits for P v and P^T dO, dS rounded for dS k and
    dS^T q, D_i from the rounded output, every result rounded once."""
    n, head_dim = q.shape[-2:]
    scale = 1 / math.sqrt(head_dim)
    scores = (q.double() @ k.double().transpose(-2, -1)).float() * scale
    if causal:
        scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    shifted = torch.exp(scores - scores.amax(-1, keepdim=True))
    total = shifted.sum(-1, keepdim=True)
    out = ((shifted.to(dtype).double() @ v.double()).float() / total).to(dtype)
    p = torch.exp(scores - scores.amax(-1, keepdim=True) - total.log())
    dv = (p.to(dtype).double().transpose(-2, -1) @ grad_o.double()).float().to(dtype)
    dp = (grad_o.double() @ v.double().transpose(-2, -1)).float()
    ds = (p * (dp - (grad_o.float() * out.float()).sum(-1, keepdim=True))).to(dtype).double()
    dq = ((ds @ k.double()).float() * scale).to(dtype)
    dk = ((ds.transpose(-2, -1) @ q.double()).float() * scale).to(dtype)
    return (out,), (dq, dk, dv)


def _share_of_tolerance(got, expected, tolerance) -> float:
    """The largest ``|error| / allowed`` over the elements: below 1 passes."""
    worst = 0.0
    for a, e in zip(got, expected, strict=True):
        allowed = tolerance.atol * e.abs().max() + tolerance.rtol * e.abs()
        worst = max(worst, float(((a.double() - e).abs() / allowed).max()))
    return worst


def test_a_16_bit_kernels_roundings_fit_the_tolerances_with_room_and_not_much_more():
    """The forward uses the GEMM's tolerances, the training ops the GEMM gradients': a 16-bit
    kernel's roundings of P and dS (emulated here) must fit them with at least 2x to spare
    (other kernels round in other orders), and must not fit bounds 8x tighter, which would
    reject a kernel for the roundings the tensor cores force on it."""
    forward, training = ops.get("attention"), ops.get("attention_train")
    shares = []
    for dtype in (torch.float16, torch.bfloat16):
        for causal in (False, True):
            for shape in ((1, 1, 257, 64), (1, 1, 300, 128)):
                inputs = training.inputs(shape, dtype, 8)
                inputs["causal"] = causal
                q, k, v, grad_o = (inputs[n].detach() for n in ("q", "k", "v", "grad_output"))
                out, grads = _sixteen_bit_kernel(q, k, v, grad_o, causal, dtype)
                with torch.no_grad():
                    expected_out = forward.oracle(q.double(), k.double(), v.double(), causal)
                shares.append(_share_of_tolerance(out, (expected_out,), forward.tolerances[dtype]))
                shares.append(_share_of_tolerance(grads, training.expected(inputs),
                                                  training.tolerances[dtype]))  # fmt: skip
    assert max(shares) < 0.5, shares
    assert max(shares) > 1 / 8, shares


@pytest.mark.parametrize("spec", [ops.get("attention"), ops.get("attention_causal_train")],
                         ids=["attention", "attention_causal_train"])  # fmt: skip
def test_baselines_match_the_oracle_or_refuse_in_one_line(spec):
    """On the CPU, SDPA's math and flash backends run; cuDNN and memory-efficient have no CPU
    kernel and must say so in one line that names the backend (the benchmark records an
    error's first line), and FlexAttention, timed on CUDA only, says so too."""
    assert next(iter(spec.baselines)) == "sdpa_flash"  # the one every ratio divides by
    inputs = spec.inputs(spec.cpu_shapes[0], torch.float16, seed=2)
    expected = spec.expected(inputs)
    for name, baseline in spec.baselines.items():
        if name in ("sdpa_cudnn", "sdpa_efficient", "flex_attention"):
            with pytest.raises(definition.BackendRefused) as refused:
                spec.call(baseline, inputs)
            message = str(refused.value)
            named = "FlexAttention" if name == "flex_attention" else name[5:].upper()
            assert "\n" not in message and named in message
            continue
        verdicts = correctness.compare_all(spec.call(baseline, inputs), expected,
                                           spec.tolerances[torch.float16], dtype=torch.float16,
                                           labels=correctness.output_labels(spec))  # fmt: skip
        assert all(v.passed for v in verdicts), (name, [v.reason for v in verdicts])


def test_the_causal_ops_are_the_full_ones_with_the_flag():
    for full, causal in ((SPECS[0], SPECS[1]), (SPECS[2], SPECS[3])):
        for field in ("shape_names", "default_shapes", "cpu_shapes", "module", "function",
                      "oracle", "baselines", "logical_bytes", "tolerances", "exercise", "wrt",
                      "dtypes"):  # fmt: skip
            assert getattr(full, field) == getattr(causal, field), field
        shape = full.default_shapes[0]
        assert causal.flops(shape) * 2 == full.flops(shape)


def test_the_math_backend_refuses_scores_past_its_limit_in_one_line(monkeypatch):
    """The math backend writes (and under autograd keeps) B x H x N x N scores, and a run keeps
    every case's CUDA graphs: at the recorded shapes that ran an H100 out of memory. Past the
    limit it refuses, naming the size; at the limit it runs."""
    # the largest recorded shape is refused; the smallest recorded head-dim-64 shape is not
    assert 4 * 32 * 4096**2 * 2 > definition.MATH_SCORES_BYTES >= 8 * 16 * 2048**2 * 2
    spec = ops.get("attention")
    inputs = spec.inputs(spec.cpu_shapes[0], torch.float16, seed=3)
    batch, heads, n, _ = spec.cpu_shapes[0]
    at_limit = batch * heads * n * n * 2  # fp16 scores of this shape, in bytes
    monkeypatch.setattr(definition, "MATH_SCORES_BYTES", at_limit)
    verdicts = correctness.compare_all(spec.call(spec.baselines["sdpa_math"], inputs),
                                       spec.expected(inputs), spec.tolerances[torch.float16],
                                       dtype=torch.float16,
                                       labels=correctness.output_labels(spec))  # fmt: skip
    assert all(v.passed for v in verdicts)
    monkeypatch.setattr(definition, "MATH_SCORES_BYTES", at_limit - 1)
    with pytest.raises(definition.BackendRefused) as refused:
        spec.call(spec.baselines["sdpa_math"], inputs)
    assert "\n" not in str(refused.value) and "MATH" in str(refused.value)
