"""Do the reference RMSNorm and GEMM kernels match the float64 oracle, reject bad inputs, and
compile once per configuration whatever the row count (M)?

On a CPU every kernel runs through Triton's interpreter, on small shapes (about 15 s on two
cores). The ``gpu`` tests count compiled variants in Triton's kernel cache; they are skipped
without CUDA.
"""

from __future__ import annotations

# isort: off
import inspect
import zlib

import pytest
import torch

import learning  # noqa: F401  (chooses the interpreter before triton is imported)
from learning import correctness, ops
from learning.runtime import default_device
from reference.kernels import matmul as matmul_module
from reference.kernels import pingpong
from reference.kernels import rmsnorm as rmsnorm_module
from reference.kernels.row_plan import RowPlan, choose_row_plan

import triton  # after learning: the backend is chosen first
import triton.language as tl

# isort: on

# The interpreter warns on loops whose start is a program id (its scalars are 1-element arrays).
pytestmark = pytest.mark.filterwarnings(
    "ignore:Conversion of an array with ndim > 0:DeprecationWarning"
)

DEVICE = default_device()
OP_NAMES = ("rmsnorm", "rmsnorm_train", "matmul", "matmul_train")
DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def _seed(*parts: object) -> int:
    """A seed of its own for each case (not the checker's), stable from run to run."""
    return 50_000 + zlib.crc32("/".join(map(str, parts)).encode()) % 10_000


def _assert_matches_oracle(spec: ops.OpSpec, fn, shape, dtype, seed: int) -> None:
    inputs = spec.inputs(shape, dtype, seed, device=DEVICE)
    actual = spec.call(fn, inputs)
    expected = spec.expected(inputs)
    verdicts = correctness.compare_all(
        actual, [e.to(DEVICE) for e in expected], spec.tolerances[dtype], dtype=dtype,
        labels=correctness.output_labels(spec),
    )  # fmt: skip
    failures = [v.reason for v in verdicts if not v.passed]
    assert not failures, f"{spec.name} {spec.shape_label(shape)} {dtype} seed {seed}: {failures}"


# --------------------------------------------------------------------------- against the oracle


@pytest.mark.parametrize("dtype", DTYPES, ids=ops.dtype_name)
@pytest.mark.parametrize("name", OP_NAMES)
def test_reference_matches_oracle(name, dtype):
    """Does each op pass the course's correctness policy on every CPU shape, in every dtype?"""
    spec = ops.get(name)
    fn = spec.kernel_function("reference")
    for shape in spec.cpu_shapes:
        _assert_matches_oracle(spec, fn, shape, dtype, _seed(name, shape, dtype))


# A plan that walks the row in 128-column chunks, two rows per step: the wide-row code paths
# (taken on the GPU for N > 32768 forward, N > 8192 fp16 backward) on a CPU-sized row.
CHUNKED_PLAN = RowPlan(block_cols=128, rows_per_program=2, num_warps=4, chunked=True, num_stages=2)
STACKED_PLAN = RowPlan(block_cols=1024, rows_per_program=8, num_warps=4, chunked=False)


def _with_plans(forward_plan: RowPlan | None, backward_plan: RowPlan | None):
    """rmsnorm_train's reference, its forward and backward launched with these plans."""

    class SavedRstd(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, residual, weight, y, rstd):
            ctx.save_for_backward(x, residual, weight, rstd)
            return y

        @staticmethod
        def backward(ctx, dy):
            x, residual, weight, rstd = ctx.saved_tensors
            dx, dweight = rmsnorm_module.rmsnorm_bwd(dy, x, residual, weight, rstd,
                                                     plan=backward_plan)  # fmt: skip
            return dx, dx, dweight, None, None

    def with_plans(x, residual, weight, eps):
        y, rstd = rmsnorm_module.rmsnorm_fwd(x, residual, weight, eps, save_rstd=True,
                                             plan=forward_plan)  # fmt: skip
        return SavedRstd.apply(x, residual, weight, y, rstd)

    return with_plans


@pytest.mark.parametrize("plan", [CHUNKED_PLAN, STACKED_PLAN], ids=["chunked", "stacked_rows"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=ops.dtype_name)
def test_rmsnorm_plans_match_oracle(plan, dtype):
    """Are the chunked (two-pass) and stacked-row paths right, forward and backward?"""
    spec = ops.get("rmsnorm_train")
    _assert_matches_oracle(spec, _with_plans(plan, plan), (13, 781), dtype,
                           _seed("plan", plan, dtype))  # fmt: skip
    if plan.chunked:  # the split backward: a full and a partial row group and column tile
        wide = (rmsnorm_module.SPLIT_GROUP_ROWS + 5, rmsnorm_module.SPLIT_TILE_COLUMNS + 53)
        # the forward's own plan: its chunked path was checked above, and at this width it
        # would cost the interpreter twice what the backward under test costs
        _assert_matches_oracle(spec, _with_plans(None, plan), wide, dtype, _seed("split", dtype))
    forward = ops.get("rmsnorm")
    inputs = forward.inputs((13, 781), dtype, _seed("fwd", plan, dtype), device=DEVICE)
    y, _ = rmsnorm_module.rmsnorm_fwd(**inputs, plan=plan)
    expected = forward.expected(inputs)[0]
    verdict = correctness.compare(y, expected, forward.tolerances[dtype], dtype=dtype)
    assert verdict.passed, verdict.reason


def test_residual_gradient_is_x_gradient():
    """x and residual enter only through their sum: are their gradients the same values?"""
    spec = ops.get("rmsnorm_train")
    inputs = spec.inputs((16, 256), torch.float32, _seed("same"), device=DEVICE)
    grad_x, grad_residual, _ = spec.call(spec.kernel_function("reference"), inputs)
    assert torch.equal(grad_x, grad_residual)


def test_matmul_reads_transposed_views():
    """Does the forward accept strided (transposed) operands without copying them first?"""
    spec = ops.get("matmul")
    inputs = spec.inputs((48, 40, 72), torch.float16, _seed("transposed"), device=DEVICE)
    a_t = inputs["a"].T.contiguous().T  # same values, column-major
    out = matmul_module.matmul(a_t, inputs["b"])
    tolerance = spec.tolerances[torch.float16]
    verdict = correctness.compare(out, spec.expected(inputs)[0], tolerance, dtype=torch.float16)
    assert verdict.passed, verdict.reason


def test_unaligned_rows_are_copied_with_a_padded_stride():
    """An operand whose rows are not 16-byte aligned gets a copy with a row stride rounded up
    to 8 elements (same values, same orientation); an aligned one is passed through as is."""
    aligned = _t(16, 64)
    assert matmul_module._with_aligned_rows(aligned) is aligned
    transposed = aligned.T
    assert matmul_module._with_aligned_rows(transposed) is transposed
    odd = _t(5, 61)
    copy = matmul_module._with_aligned_rows(odd)
    assert copy.stride() == (64, 1) and torch.equal(copy, odd)
    odd_t = _t(61, 5).T  # a transposed view: 5 x 61, memory rows of 5 (10 bytes)
    copy_t = matmul_module._with_aligned_rows(odd_t)
    assert copy_t.shape == (5, 61) and copy_t.stride() == (1, 8) and torch.equal(copy_t, odd_t)
    sliced = _t(8, 64)[:, 1:33]  # aligned stride, but the base is one element off
    assert matmul_module._with_aligned_rows(sliced).data_ptr() % 16 == 0


def _spy_launches(monkeypatch) -> list[str]:
    """The kernels the matmul wrappers launch, in order, by name."""
    launched = []
    real_persistent, real_launch = matmul_module._launch_persistent, matmul_module._launch

    def spy_persistent(a, b, kernel=None):
        name = "persistent" if kernel is None else _jit_function(kernel).fn.__name__
        launched.append(name)
        return real_persistent(a, b, kernel)

    def spy_launch(kernel, a, b, splits=None):
        launched.append(_jit_function(kernel).fn.__name__)
        return real_launch(kernel, a, b, splits)

    monkeypatch.setattr(matmul_module, "_launch_persistent", spy_persistent)
    monkeypatch.setattr(matmul_module, "_launch", spy_launch)
    return launched


@pytest.mark.parametrize(("dtype", "persistent"),
                         [(torch.float16, True), (torch.bfloat16, True), (torch.float32, False)],
                         ids=["float16", "bfloat16", "float32"])  # fmt: skip
def test_matmul_routes_16_bit_to_the_persistent_kernel(monkeypatch, dtype, persistent):
    """16-bit products of any shape (75 x 93 x 61 too) take the persistent kernel, forward and
    dA; fp32 takes the classic one. A dB of few tiles (61 x 93: one) takes the rows kernel."""
    launched = _spy_launches(monkeypatch)
    spec = ops.get("matmul_train")
    inputs = spec.inputs((75, 93, 61), dtype, _seed("route", dtype), device=DEVICE)
    spec.call(spec.kernel_function("reference"), inputs)
    main = "persistent" if persistent else "_matmul_kernel"
    assert launched == [main, main, "_matmul_rows_kernel"]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32],
                         ids=["float16", "bfloat16", "float32"])  # fmt: skip
def test_matmul_weight_gradient_of_many_tiles_is_not_split(monkeypatch, dtype):
    """A dB whose output has more than half as many tiles as SMs (here 257 x 130: 6 tiles for
    the interpreter's 4) is not split: 16-bit goes to the persistent rows kernel, on operands
    with unaligned rows, fp32 to the rows kernel writing C. Both match the float64 product."""
    shape = (33, 130, 257)  # M x N x K: dB is 257 x 130, reducing over 33 tokens
    assert matmul_module._split_k(257, 130, 33, torch.device(DEVICE)) is None
    launched = _spy_launches(monkeypatch)
    spec = ops.get("matmul_train")
    _assert_matches_oracle(spec, spec.kernel_function("reference"), shape, dtype,
                           _seed("dB tiles", dtype))  # fmt: skip
    if dtype == torch.float32:
        assert launched == ["_matmul_kernel", "_matmul_kernel", "_matmul_rows_kernel"]
    else:
        assert launched == ["persistent", "persistent", "_matmul_persistent_rows_kernel"]


# --------------------------------------------------------------------------- input validation


def _t(*shape, dtype=torch.float16):
    return torch.randn(shape, device=DEVICE).to(dtype)


@pytest.mark.parametrize(
    ("args", "error", "fragment"),
    [
        ((_t(4, 8), _t(4, 9), _t(8)), ValueError, "residual has shape"),
        ((_t(4, 8), _t(4, 8), _t(9)), ValueError, "weight has shape"),
        ((_t(32), _t(32), _t(32)), ValueError, "must be 2-D"),
        ((_t(4, 8), _t(4, 8, dtype=torch.float32), _t(8)), TypeError, "share one dtype"),
        ((_t(4, 8, dtype=torch.double), _t(4, 8), _t(8)), TypeError, "supported"),
        ((_t(8, 4).T, _t(4, 8), _t(8)), ValueError, "contiguous"),
        (([[1.0]], _t(1, 1), _t(1)), TypeError, "torch.Tensor"),
    ],
    ids=["shape", "weight", "1-D", "mixed-dtype", "float64", "strided-columns", "list"],
)
def test_rmsnorm_rejects_bad_inputs(args, error, fragment):
    """Does a bad input get a one-line error that names the problem?"""
    with pytest.raises(error, match=fragment) as raised:
        rmsnorm_module.rmsnorm(*args)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("args", "error", "fragment"),
    [
        ((_t(4, 8), _t(9, 5)), ValueError, "inner sizes differ"),
        ((_t(4, 8), _t(8, 5, dtype=torch.bfloat16)), TypeError, "must match"),
        ((_t(4, 8, 2), _t(8, 5)), ValueError, "must be 2-D"),
        ((_t(4, 8, dtype=torch.int32), _t(8, 5, dtype=torch.int32)), TypeError, "supported"),
        ((_t(4, 8), "b"), TypeError, "torch.Tensor"),
    ],
    ids=["inner", "mixed-dtype", "3-D", "int32", "string"],
)
def test_matmul_rejects_bad_inputs(args, error, fragment):
    """Does a bad input get a one-line error that names the problem?"""
    with pytest.raises(error, match=fragment) as raised:
        matmul_module.matmul(*args)
    assert "\n" not in str(raised.value)


# --------------------------------------------------------------------------- specialization


def _jit_function(kernel):
    """The JIT function under any autotuner / heuristics wrappers."""
    while isinstance(kernel, (triton.runtime.Autotuner, triton.runtime.Heuristics)):
        kernel = kernel.fn
    return kernel


def _constexpr_params(kernel) -> set[str]:
    parameters = inspect.signature(_jit_function(kernel).fn).parameters.values()
    return {p.name for p in parameters if p.annotation in (tl.constexpr, "tl.constexpr")}


def _do_not_specialize(kernel) -> set[str]:
    jit = _jit_function(kernel)
    names = getattr(jit, "do_not_specialize", None)
    if names is None:  # the interpreter keeps the decorator's arguments instead
        names = jit.kwargs.get("do_not_specialize") or []
    return set(names)


ROW_KERNELS = {
    "_rmsnorm_fwd_kernel": {
        "N", "BLOCK", "ROWS", "CHUNKED", "STORE_RSTD", "NUM_STAGES", "EVICT_ROWS", "MASK_ROWS"
    },  # fmt: skip
    "_rmsnorm_bwd_kernel": {"N", "BLOCK", "ROWS"},
    "_rmsnorm_bwd_tiles_kernel": {"N", "TILE", "ROWS", "GROUP_ROWS"},
}


def test_the_row_mask_is_dropped_only_where_every_row_exists():
    """The forward may skip its row mask only when every program's rows exist (a row count that
    is a multiple of the plan's rows: else the last program would read and write past the
    end); the measured rule then drops it from whole rows that fill their block, and from the
    chunked path except in bf16."""
    one_chunk = rmsnorm_module.forward_plan(4096, 32768, 2)
    assert one_chunk.chunked and one_chunk.rows_per_program == 1
    for n_rows in (4096, 4097, 1):
        assert not rmsnorm_module._mask_rows(one_chunk, torch.float16, n_rows, 32768)
        assert not rmsnorm_module._mask_rows(one_chunk, torch.float32, n_rows, 32768)
        assert rmsnorm_module._mask_rows(one_chunk, torch.bfloat16, n_rows, 32768)
    stacked = rmsnorm_module.forward_plan(65536, 128, 2)
    assert not stacked.chunked and stacked.rows_per_program > 1
    rows = stacked.rows_per_program
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        assert not rmsnorm_module._mask_rows(stacked, dtype, 65536, 128)
        assert not rmsnorm_module._mask_rows(stacked, dtype, 3 * rows, 128)
        for n_rows in (3 * rows + 1, rows - 1, 1):
            assert rmsnorm_module._mask_rows(stacked, dtype, n_rows, 128)
    one_row = rmsnorm_module.forward_plan(1024, 1024, 4)
    assert one_row.rows_per_program == 1 and not one_row.chunked
    assert not rmsnorm_module._mask_rows(one_row, torch.float32, 1024, 1024)
    narrower = rmsnorm_module.forward_plan(1823, 781, 4)  # a column mask is left: keep the row's
    assert narrower.rows_per_program == 1 and narrower.block_cols == 1024
    assert rmsnorm_module._mask_rows(narrower, torch.float32, 1823, 781)


@pytest.mark.parametrize("n_rows", [32, 37])
def test_a_stacked_forward_with_and_without_its_row_mask(n_rows):
    """Four rows a program: 32 rows leave the mask out, 37 keep it; either way each row of y is
    the oracle's, and the rows after the last are never written (a canary tail)."""
    spec = ops.get("rmsnorm")
    inputs = spec.make_inputs((n_rows, 128), torch.float32, 0, default_device())
    x, residual, weight, eps = inputs.values()
    plan = RowPlan(block_cols=128, rows_per_program=4, num_warps=4, chunked=False)
    assert rmsnorm_module._mask_rows(plan, x.dtype, n_rows, 128) == (n_rows % 4 != 0)
    canary = -7.0
    buffer = torch.full((n_rows + 8, 128), canary, dtype=x.dtype, device=x.device)
    y = buffer[:n_rows]
    rmsnorm_module._rmsnorm_fwd_kernel[plan.grid(n_rows)](
        x, residual, weight, y, y, n_rows, x.stride(0), residual.stride(0), eps,
        N=128, BLOCK=128, ROWS=4, CHUNKED=False, STORE_RSTD=False, NUM_STAGES=1,
        EVICT_ROWS=False, MASK_ROWS=rmsnorm_module._mask_rows(plan, x.dtype, n_rows, 128),
        num_warps=4,
    )  # fmt: skip
    torch.testing.assert_close(y, spec.expected(inputs)[0].to(x.dtype), rtol=1e-5, atol=1e-5)
    assert torch.all(buffer[n_rows:] == canary)


@pytest.mark.parametrize("name", sorted(ROW_KERNELS))
def test_rmsnorm_row_count_is_runtime(name):
    """Is the row count a runtime argument Triton never specializes, and the width constexpr?"""
    kernel = getattr(rmsnorm_module, name)
    assert _constexpr_params(kernel) == ROW_KERNELS[name]
    assert _do_not_specialize(kernel) == {"n_rows"}
    assert _do_not_specialize(rmsnorm_module._rmsnorm_dweight_kernel) == {"n_partials"}
    dots = rmsnorm_module._rmsnorm_bwd_dots_kernel  # one program a row: no row count at all
    assert _constexpr_params(dots) == {"N", "BLOCK"}
    assert "n_rows" not in _jit_function(dots).arg_names


def test_the_backward_holds_rows_up_to_16384_values_and_splits_wider_ones():
    """The shared rule chunks a row of three live fp32 rows from 8192 fp32 / 12288 fp16 values;
    the backward holds it whole with 32 warps up to WHOLE_ROW_BACKWARD values (4% faster at
    16384 fp16), and runs the split kernels above (1.20x at 32768 fp16: results/NOTES.md)."""
    limit = rmsnorm_module.WHOLE_ROW_BACKWARD
    assert limit == 16384
    for n_cols, element_size in ((8192, 4), (12288, 2), (12288, 4), (16384, 2), (16384, 4)):
        plan = rmsnorm_module.backward_plan(4096, n_cols, element_size)
        assert not plan.chunked, (n_cols, element_size)
        assert (plan.block_cols, plan.rows_per_program, plan.num_warps) == (
            triton.next_power_of_2(n_cols), 1, 32)  # fmt: skip
    for n_cols in (16385, 32768, 65536):
        for element_size in (2, 4):
            assert rmsnorm_module.backward_plan(4096, n_cols, element_size).chunked
    for n_cols in (128, 1024, 4096):  # unchanged where the shared rule holds the row
        assert rmsnorm_module.backward_plan(4096, n_cols, 2) == choose_row_plan(
            4096, n_cols, 2, passes=2, live_rows=rmsnorm_module.BACKWARD_LIVE_ROWS,
            tile_bytes=rmsnorm_module.BACKWARD_TILE_BYTES)  # fmt: skip


def test_matmul_specialization():
    """Forward: M runtime, N and K constexpr. Weight gradient: M and N constexpr, K runtime."""
    tile = {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "DOT_IN_FP32", "INPUT_PRECISION"}
    forward, rows = matmul_module._matmul_kernel, matmul_module._matmul_rows_kernel
    assert _constexpr_params(forward) == {"N", "K", "EVEN_K"} | tile
    assert _do_not_specialize(forward) == {"M"}
    assert forward.keys == ["N", "K"]
    assert _constexpr_params(rows) == {"M", "N"} | tile
    assert _do_not_specialize(rows) == {"K"}
    assert rows.keys == ["M", "N"]
    persistent_tile = {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "EPILOGUE_SUBTILE",
                       "WARP_SPECIALIZE", "FLATTEN", "NUM_SMS", "A_COLUMN_MAJOR", "B_COLUMN_MAJOR",
                       "C_DESCRIPTOR", "DOT_IN_FP32"}  # fmt: skip
    forward = matmul_module._matmul_persistent_kernel
    rows = matmul_module._matmul_persistent_rows_kernel
    assert _constexpr_params(forward) == {"N", "K"} | persistent_tile
    assert _do_not_specialize(forward) == {"M"}
    assert _constexpr_params(rows) == {"M", "N"} | persistent_tile
    assert _do_not_specialize(rows) == {"K"}
    assert rows.keys == ["M", "N", "A_COLUMN_MAJOR", "B_COLUMN_MAJOR"]
    assert _do_not_specialize(matmul_module._sum_splits_kernel) == {"splits"}


def test_every_gemm_autotuner_times_warm_by_graph_replay():
    """Each autotuner in matmul.py picks under the conditions the course judges in (warm L2,
    graph replay), not under Triton's default cold single launches."""
    tuners = [v for v in vars(matmul_module).values() if isinstance(v, triton.runtime.Autotuner)]
    assert len(tuners) >= 4
    assert all(tuner.do_bench is matmul_module._warm_benchmark for tuner in tuners)


# --------------------------------------------------------------------------- compiles (GPU)


def _compiled_variants(kernel) -> int:
    jit = _jit_function(kernel)
    return sum(len(caches[0]) for caches in jit.device_caches.values())


@pytest.mark.gpu
def test_rmsnorm_compiles_once_for_any_row_count():
    """Backward: one binary each for N = 1024, whatever M. Forward: one for each answer of its
    row-mask rule, so two (1024 fp16 is two rows a program: odd row counts keep the mask)."""
    spec = ops.get("rmsnorm_train")
    fn = spec.kernel_function("reference")
    kernels = [rmsnorm_module._rmsnorm_fwd_kernel, rmsnorm_module._rmsnorm_bwd_kernel,
               rmsnorm_module._rmsnorm_dweight_kernel]  # fmt: skip
    counts = (1000, 1024, 4099, 17, 65536)
    plan = rmsnorm_module.forward_plan(1, 1024, 2)
    masks = {rmsnorm_module._mask_rows(plan, torch.float16, rows, 1024) for rows in counts}
    assert masks == {True, False}
    before = [_compiled_variants(k) for k in kernels]
    for rows in counts:
        spec.call(fn, spec.inputs((rows, 1024), torch.float16, rows, device="cuda"))
    torch.cuda.synchronize()
    added = [_compiled_variants(k) - b for k, b in zip(kernels, before, strict=True)]
    assert added == [2, 1, 1], f"compiled variants added (fwd, bwd, dweight): {added}"


@pytest.mark.gpu
def test_the_split_backward_compiles_once_for_any_row_count():
    """Rows too wide to hold: the dots and tiles kernels compile one binary each for a width,
    whatever the row count."""
    spec = ops.get("rmsnorm_train")
    fn = spec.kernel_function("reference")
    kernels = [rmsnorm_module._rmsnorm_bwd_dots_kernel, rmsnorm_module._rmsnorm_bwd_tiles_kernel,
               rmsnorm_module._rmsnorm_bwd_kernel]  # fmt: skip
    before = [_compiled_variants(k) for k in kernels]
    for rows in (7, 300, 1000):
        spec.call(fn, spec.inputs((rows, 20000), torch.float16, rows, device="cuda"))
    torch.cuda.synchronize()
    added = [_compiled_variants(k) - b for k, b in zip(kernels, before, strict=True)]
    assert added == [1, 1, 0], f"compiled variants added (dots, tiles, whole rows): {added}"


@pytest.mark.gpu
def test_matmul_compiles_once_per_config_for_any_m():
    """After the first M has tuned N = K = 512, do other Ms (aligned or not) compile nothing?
    And at N = 1536, K = 1024, where dB (1024 x 1536, 96 tiles) is not split and takes the
    persistent rows kernel (or, on Hopper, the ping-pong kernel, as the forward and dA do)?"""
    spec = ops.get("matmul_train")
    fn = spec.kernel_function("reference")
    kernels = [matmul_module._matmul_persistent_kernel, matmul_module._matmul_rows_kernel,
               matmul_module._sum_splits_kernel, matmul_module._matmul_persistent_rows_kernel,
               pingpong._matmul_pingpong_kernel]  # fmt: skip
    sample = torch.empty((64, 64), dtype=torch.float16, device="cuda")
    hopper = pingpong.ready(sample, sample)
    before = [_compiled_variants(k) for k in kernels]  # other tests may have compiled some
    spec.call(fn, spec.inputs((256, 512, 512), torch.float16, 0, device="cuda"))
    after_first = [_compiled_variants(k) for k in kernels]
    for m in (1000, 3000, 4096, 17):
        spec.call(fn, spec.inputs((m, 512, 512), torch.float16, m, device="cuda"))
    torch.cuda.synchronize()
    assert [_compiled_variants(k) for k in kernels] == after_first
    added = [a - b for a, b in zip(after_first, before, strict=True)]
    # 512 x 512 is 16 tiles: dB always goes through split-K partials, whatever the split count
    assert added[2] <= 1 and added[3] == 0
    if hopper:  # the forward (A, B) and dA (B read transposed): at most two variants
        assert added[0] == 0 and added[4] <= 2
    else:  # the autotuner compiles every candidate once per key: the forward's and dA's
        assert added[0] <= 2 * len(kernels[0].configs) and added[4] == 0
    assert added[1] <= len(kernels[1].configs)

    spec.call(fn, spec.inputs((256, 1536, 1024), torch.float16, 1, device="cuda"))
    after_wide = [_compiled_variants(k) for k in kernels]
    for m in (1000, 3000, 17):
        spec.call(fn, spec.inputs((m, 1536, 1024), torch.float16, m, device="cuda"))
    torch.cuda.synchronize()
    assert [_compiled_variants(k) for k in kernels] == after_wide
    if hopper:  # dB reads A transposed: at most one more variant, none of the rows kernel
        assert after_wide[3] == after_first[3] and after_wide[4] - after_first[4] <= 1
    else:
        assert 0 < after_wide[3] - after_first[3] <= len(kernels[3].configs)


@pytest.mark.gpu
def test_the_warm_benchmark_returns_the_autotuners_quantiles():
    x = torch.ones(1 << 20, device="cuda")
    timings = matmul_module._warm_benchmark(lambda: x.mul_(1.0), quantiles=(0.5, 0.2, 0.8))
    assert len(timings) == 3 and all(t > 0 for t in timings)
