"""Do the reference row kernels (add, sum, max, softmax and its backward) match the oracle?

Runs on the CPU through Triton's interpreter (compiled on a GPU when there is one). The ops are
read from the registry; only those whose module is tested here are selected, so a new op of
these modules is picked up without editing this file.
"""

import zlib

import learning  # noqa: F401  (chooses the backend before triton is imported)

# isort: split
import pytest
import torch
from triton.runtime.jit import JITFunction

from learning import ops
from learning.correctness import compare, compare_all, output_labels
from learning.runtime import default_device
from reference.kernels import add as add_module
from reference.kernels import reductions, row_plan
from reference.kernels import softmax as softmax_module
from reference.kernels.row_plan import RowPlan, choose_row_plan

MODULES = ("kernels.add", "kernels.reductions", "kernels.softmax")
SPECS = [spec for spec in ops.OPS.values() if spec.module in MODULES]
DEVICE = default_device()


def _seed(*parts: object) -> int:
    # Fresh for every case and unlike the checker's seeds, but the same on every run.
    return 7919 + zlib.crc32(repr(parts).encode()) % 100_000


def _assert_passes(spec, shape, dtype, actual, inputs) -> None:
    verdicts = compare_all(
        actual, spec.expected(inputs), spec.tolerances[dtype], dtype=dtype,
        labels=output_labels(spec),
    )  # fmt: skip
    failed = [v.reason for v in verdicts if not v.passed]
    assert not failed, f"{spec.name} {spec.shape_label(shape)} {dtype}: " + "; ".join(failed)


# --------------------------------------------------------------------------- the registry's cases


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize(
    "spec, shape",
    [(spec, shape) for spec in SPECS for shape in spec.cpu_shapes],
    ids=lambda v: v.name if isinstance(v, ops.OpSpec) else "x".join(map(str, v)),
)
def test_reference_matches_oracle(spec, shape, dtype):
    """Does every op of these modules pass the comparison policy on the registry's CPU shapes?"""
    inputs = spec.inputs(shape, dtype, _seed(spec.name, shape, dtype), DEVICE)
    actual = spec.call(spec.kernel_function("reference"), inputs)
    _assert_passes(spec, shape, dtype, actual, inputs)


def test_modules_cover_the_registry():
    """Are add, sum, max, softmax and softmax_train all served by these modules?"""
    assert {"add", "sum", "max", "softmax", "softmax_train"} <= {s.name for s in SPECS}


# --------------------------------------------------------------------------- paths CPU shapes miss

CHUNKED = RowPlan(block_cols=256, rows_per_program=1, num_warps=4, chunked=True, num_stages=2)
STACKED = RowPlan(block_cols=1024, rows_per_program=8, num_warps=8, chunked=False)


@pytest.mark.parametrize("plan", [CHUNKED, STACKED], ids=["chunked", "8-rows-a-program"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=str)
def test_explicit_plans(plan, dtype):
    """Are the chunked loops and the stacked rows (a last program half past the end) right?

    37 x 781: 781 is 3 full chunks of 256 and a ragged one; 37 rows are 4 programs of 8, the
    last with 3 rows past the end.
    """
    shape = (37, 781)
    x = ops.OPS["softmax"].inputs(shape, dtype, _seed("plan", plan, dtype), DEVICE)["x"]
    reference = x.double()
    tolerance = ops.FORWARD_TOLERANCES[dtype]
    cases = {
        "row_sum": (reductions.row_sum(x, plan), reference.sum(-1)),
        "row_max": (reductions.row_max(x, plan), reference.amax(-1)),
        "softmax": (softmax_module.softmax_fwd(x, plan), torch.softmax(reference, -1)),
    }
    y = softmax_module.softmax_fwd(x)
    dy = torch.randn(shape, generator=torch.Generator().manual_seed(3)).to(dtype).to(DEVICE)
    dot = (y.double() * dy.double()).sum(-1, keepdim=True)
    cases["softmax backward"] = (softmax_module.softmax_bwd(y, dy, plan), y.double() * (dy - dot))
    for label, (actual, expected) in cases.items():
        verdict = compare(actual, expected, tolerance, dtype=dtype, label=label)
        assert verdict.passed, verdict.reason


def test_row_stride_is_honoured():
    """Do the row kernels read a column slice (rows 1000 apart, 781 wide) correctly?"""
    base = torch.randn((23, 1000), generator=torch.Generator().manual_seed(5)).to(DEVICE)
    x = base[:, 100:881]
    assert x.stride() == (1000, 1)
    tolerance = ops.FORWARD_TOLERANCES[torch.float32]
    for label, actual, expected in [
        ("row_sum", reductions.row_sum(x), x.double().sum(-1)),
        ("row_max", reductions.row_max(x), x.double().amax(-1)),
        ("softmax", softmax_module.softmax(x), torch.softmax(x.double(), -1)),
    ]:
        verdict = compare(actual, expected, tolerance, dtype=torch.float32, label=label)
        assert verdict.passed, verdict.reason


def test_backward_accepts_a_non_contiguous_gradient():
    """Does autograd's softmax backward cope with a transposed ``dy``?"""
    x = torch.randn((19, 33), dtype=torch.float32, device=DEVICE, requires_grad=True)
    dy = torch.randn((33, 19), dtype=torch.float32, device=DEVICE).t()
    (dx,) = torch.autograd.grad(softmax_module.softmax(x), x, dy)
    y = torch.softmax(x.detach().double(), -1)
    expected = y * (dy.double() - (y * dy.double()).sum(-1, keepdim=True))
    verdict = compare(dx, expected, ops.GRADIENT_TOLERANCES[torch.float32], dtype=torch.float32)
    assert verdict.passed, verdict.reason


def test_empty_batch():
    """Does a tensor with no rows give an empty result instead of launching a zero grid?"""
    x = torch.empty((0, 64), device=DEVICE)
    assert reductions.row_sum(x).shape == (0,)
    assert softmax_module.softmax(x).shape == (0, 64)
    assert add_module.add(x, x).shape == (0, 64)


# --------------------------------------------------------------------------- the row plan

WIDTHS = (1, 7, 128, 781, 1024, 3000, 4096, 8192, 16384, 32768, 100_000)


@pytest.mark.parametrize("element_size", [2, 4])
@pytest.mark.parametrize("passes", [1, 2])
def test_plan_properties(element_size, passes):
    """Does every plan cover its row (or chunk it), load whole 16-byte vectors, use sane warps?"""
    vector = 16 // element_size
    for n_cols in WIDTHS:
        plan = choose_row_plan(4096, n_cols, element_size, passes=passes)
        label = f"{n_cols} columns, {element_size}-byte, passes={passes}: {plan}"
        assert plan.block_cols & (plan.block_cols - 1) == 0, label
        assert plan.block_cols >= vector, label
        if plan.chunked:
            assert plan.block_cols < n_cols and plan.rows_per_program == 1, label
            chunk = row_plan.CHUNK_BYTES if passes == 1 else row_plan.REREAD_CHUNK_BYTES
            assert plan.block_cols * element_size == chunk, label
        else:
            assert plan.block_cols >= n_cols, label
            tile_bytes = plan.rows_per_program * plan.block_cols * element_size
            assert tile_bytes <= max(row_plan.TILE_BYTES, plan.block_cols * element_size), label
        assert 4 <= plan.num_warps <= 32, label
        values_per_thread = plan.rows_per_program * plan.block_cols // (32 * plan.num_warps)
        assert values_per_thread <= 32, f"{label}: {values_per_thread} values a thread spill"


def test_plan_shapes_of_the_default_cases():
    """Narrow rows stacked, wide rows whole (softmax) or chunked (sum), 4096 in one block?"""
    narrow = choose_row_plan(65536, 128, 2, passes=2)
    assert narrow.rows_per_program > 1 and not narrow.chunked
    # the widths where 8 KiB tiles lost up to 30% (row-plan-grid-*.log): 2 rows, 4 warps
    for n_cols in (781, 1024):
        plan = choose_row_plan(8192, n_cols, 2, passes=2)
        assert (plan.rows_per_program, plan.num_warps) == (2, 4), plan
    # the RMSNorm backward stacks to 16 KiB (its partial dweight rows cost per program) and keeps
    # every row 2 KiB or wider as the shared rule has it
    from reference.kernels.rmsnorm import backward_plan

    narrow_backward = backward_plan(65536, 128, 2)
    assert (narrow_backward.rows_per_program, narrow_backward.num_warps) == (64, 16)
    for n_cols in (2048, 4096, 32768):
        shared = choose_row_plan(1, n_cols, 2, passes=2, live_rows=3)
        assert backward_plan(1, n_cols, 2) == shared, n_cols
    with pytest.raises(ValueError, match="tile_bytes"):
        choose_row_plan(1, 128, 2, tile_bytes=1024)
    wide_softmax = choose_row_plan(4096, 32768, 2, passes=2)
    assert not wide_softmax.chunked and wide_softmax.num_warps == 32
    # a one-pass walk gives each thread one 16-byte vector a step: 16 KiB chunks, 32 warps
    # (two vectors, 16 warps, lost 0.3-0.9% to torch.compile: streaming-plans.log)
    for element_size in (2, 4):
        wide_sum = choose_row_plan(4096, 32768, element_size, passes=1)
        assert wide_sum.chunked and wide_sum.num_warps == 32, wide_sum
        assert wide_sum.block_cols * element_size == row_plan.CHUNK_BYTES
    wide_backward = choose_row_plan(4096, 32768, 4, passes=2, live_rows=2)
    assert wide_backward.chunked
    middle = choose_row_plan(16384, 4096, 2, passes=2)
    assert middle.block_cols == 4096 and middle.rows_per_program == 1 and middle.num_warps == 8


def test_two_input_rows_count_twice_when_rows_are_aligned():
    """The RMSNorm forward loads x and residual: twice the warps of softmax's plan where the
    rows take 16-byte loads (row-plan-grid-rmsnorm.log), the same plan at 781 (they do not)."""
    from reference.kernels.rmsnorm import FORWARD_STREAMS, forward_plan

    assert FORWARD_STREAMS == 2
    for n_cols, warps in ((128, 8), (1024, 8), (4096, 16), (8192, 32)):
        softmax_plan = choose_row_plan(1, n_cols, 2, passes=2)
        plan = forward_plan(1, n_cols, 2)
        assert plan.num_warps == warps, (n_cols, plan)
        assert plan.num_warps == min(32, 2 * softmax_plan.num_warps)
        assert (plan.block_cols, plan.rows_per_program) == (
            softmax_plan.block_cols, softmax_plan.rows_per_program)  # fmt: skip
    assert forward_plan(1, 781, 2) == choose_row_plan(1, 781, 2, passes=2)
    with pytest.raises(ValueError, match="streams=0"):
        choose_row_plan(1, 128, 2, streams=0)


@pytest.mark.parametrize(
    "n_cols, element_size, block, chunked",
    [(8192, 2, 8192, False), (8192, 4, 8192, True), (16384, 2, 16384, True),
     (32768, 2, 32768, True), (32768, 4, 32768, True), (65536, 2, 32768, True)],
)  # fmt: skip
def test_wide_input_rows_are_reread_from_l2_not_held(n_cols, element_size, block, chunked):
    """Two input rows each wider than 16 KiB: one chunk of up to 32768 values, read twice
    (row-chunk-rmsnorm-*.log), where softmax, loading one row, keeps 32768 values whole."""
    from reference.kernels.rmsnorm import forward_plan

    plan = forward_plan(1, n_cols, element_size)
    assert (plan.block_cols, plan.chunked, plan.num_warps) == (block, chunked, 32), plan
    assert not choose_row_plan(1, 32768, 2, passes=2).chunked


def test_plan_ignores_the_row_count():
    """Is the plan (hence the compiled kernel) the same for every batch size?"""
    for n_cols in WIDTHS:
        plans = {choose_row_plan(rows, n_cols, 2, passes=2) for rows in (1, 1000, 1024, 1823, 4096)}
        assert len(plans) == 1, plans


def test_plan_rejects_nonsense():
    """Are impossible plans refused in one line?"""
    with pytest.raises(ValueError, match="power of two"):
        RowPlan(block_cols=100, rows_per_program=1, num_warps=4, chunked=False)
    with pytest.raises(ValueError):
        choose_row_plan(10, 0, 2)
    x = torch.randn((4, 3000), device=DEVICE)
    with pytest.raises(ValueError, match="must be chunked"):
        softmax_module.softmax_fwd(x, RowPlan(1024, 1, 4, chunked=False))


# --------------------------------------------------------------------------- launcher validation


def _t(*shape, dtype=torch.float32, device=DEVICE):
    return torch.zeros(shape, dtype=dtype, device=device)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: reductions.row_sum(_t(8)), ValueError, "2-D"),
        (lambda: reductions.row_max(_t(4, 4, dtype=torch.int32)), TypeError, "dtype"),
        (lambda: softmax_module.softmax(_t(8, 4).t()), ValueError, "contiguous"),
        (lambda: softmax_module.softmax([[1.0]]), TypeError, "torch.Tensor"),
        (lambda: softmax_module.softmax(_t(4, 4, device="meta")), ValueError, "on meta"),
        (lambda: reductions.row_sum(_t(4, 0)), ValueError, "no columns"),
        (lambda: add_module.add(_t(2, 3), _t(3, 2)), ValueError, "same shape"),
        (lambda: add_module.add(_t(2, 3), _t(2, 3, dtype=torch.float16)), TypeError, "same dtype"),
        (lambda: add_module.add(_t(4, 4).t(), _t(4, 4)), ValueError, "contiguous"),
        (lambda: add_module.add(_t(4, 4), _t(4, 4, dtype=torch.int64)), TypeError, "dtype"),
    ],
    ids=["1-D", "int32", "transposed", "list", "wrong-device", "no-columns",
         "add-shapes", "add-dtypes", "add-transposed", "add-int64"],
)  # fmt: skip
def test_launchers_reject_bad_inputs(call, error, match):
    """Does each launcher refuse a bad input with one clear line before launching anything?"""
    with pytest.raises(error, match=match) as raised:
        call()
    assert "\n" not in str(raised.value)


# --------------------------------------------------------------------------- specialization

KERNELS = {
    add_module._add_kernel: ({"BLOCK"}, "n_elements"),
    reductions._row_sum_kernel: ({"N", "BLOCK", "ROWS", "NUM_STAGES"}, "n_rows"),
    reductions._row_max_kernel: ({"N", "BLOCK", "ROWS", "NUM_STAGES"}, "n_rows"),
    softmax_module._softmax_fwd_kernel: ({"N", "BLOCK", "ROWS"}, "n_rows"),
    softmax_module._softmax_fwd_chunked_kernel: ({"N", "BLOCK", "NUM_STAGES"}, "n_rows"),
    softmax_module._softmax_bwd_kernel: ({"N", "BLOCK", "ROWS"}, "n_rows"),
    softmax_module._softmax_bwd_chunked_kernel: ({"N", "BLOCK", "NUM_STAGES"}, "n_rows"),
}


def _as_jit_function(kernel) -> JITFunction:
    # Under the interpreter @triton.jit returns an InterpretedFunction holding the same Python
    # function and options; building the JITFunction shows what the compiler would specialize.
    if isinstance(kernel, JITFunction):
        return kernel
    return JITFunction(kernel.fn, **kernel.kwargs)


@pytest.mark.parametrize("kernel", list(KERNELS), ids=lambda k: k.fn.__name__)
def test_width_is_constexpr_and_row_count_is_not_specialized(kernel):
    """Is the row width compiled in, and the row count a runtime value Triton won't specialize?"""
    constexprs, count = KERNELS[kernel]
    jit = _as_jit_function(kernel)
    assert {p.name for p in jit.params if p.is_constexpr} == constexprs
    assert count in jit.do_not_specialize
    (param,) = [p for p in jit.params if p.name == count]
    assert param.do_not_specialize and not param.is_constexpr


def _compiled_variants(kernel) -> int:
    return sum(len(caches[0]) for caches in kernel.device_caches.values())


@pytest.mark.gpu
def test_new_row_counts_do_not_compile_again():
    """Do 1000, 1024, 1823 and 4096 rows of one width share one compiled kernel?

    The row plans ignore the row count. ``add`` is flat and sizes its block by the element
    count (``choose_block``: small tensors take smaller blocks for enough programs), so it may
    compile once per block size those counts select, never more.
    """
    row_counts = (1000, 1024, 1823, 4096)
    blocks = {add_module.choose_block(rows * 1536, 2) for rows in row_counts}
    calls = {
        softmax_module._softmax_fwd_kernel: (lambda x: softmax_module.softmax(x), 0),
        reductions._row_sum_kernel: (lambda x: reductions.row_sum(x), 0),
        add_module._add_kernel: (
            lambda x: add_module.add(x, x),
            len(blocks - {add_module.choose_block(999 * 1536, 2)}),
        ),
    }
    for kernel, (call, new_blocks) in calls.items():
        call(torch.randn((999, 1536), device="cuda", dtype=torch.float16))
        before = _compiled_variants(kernel)
        for rows in row_counts:
            call(torch.randn((rows, 1536), device="cuda", dtype=torch.float16))
        torch.cuda.synchronize()
        assert _compiled_variants(kernel) == before + new_blocks, kernel.fn.__name__
