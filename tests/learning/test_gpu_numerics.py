"""The checker's changes to Triton's interpreter (``learning/check/gpu_numerics.py``).

* Conversions to 16 bits: a tiny kernel converts more than a million float32 values of every
  kind (random bit patterns, so subnormals, infinities and NaNs among them; ties; values in
  float16's range and just past it) and stores the bits PyTorch's ``.to(torch.bfloat16)`` and
  ``.to(torch.float16)`` store (a NaN as a NaN, whatever its payload). Toward zero
  (``fp_downcast_rounding="rtz"``) still truncates.
* The order of programs: a kernel whose program i hands a partial sum to program i + 1
  through global memory passes under the interpreter's own order and fails under the
  checker's, which names the kernel.
* ``tl.dot``: on float32 tiles in TF32 (Triton's default) it reads 10 mantissa bits of each
  operand, as the tensor cores do, and in full float32 when asked for ``"ieee"``; on bfloat16
  tiles it multiplies the values (the interpreter's own multiplies the bit patterns).
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from own_work import PLAIN_ADD_MODULE  # an add without an upcast

import learning  # noqa: F401  (chooses the interpreter before triton is imported)
from learning.check import gpu_numerics

COUNT = 1 << 20  # values per conversion
BLOCK = 1 << 17


@pytest.fixture
def patched():
    gpu_numerics.install()
    try:
        yield
    finally:
        gpu_numerics.uninstall()


@triton.jit
def _convert(x_ptr, out_ptr, n, ROUNDING: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x.to(out_ptr.dtype.element_ty, fp_downcast_rounding=ROUNDING),
             mask=mask)  # fmt: skip


@triton.jit
def _widen(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask).to(tl.float32), mask=mask)


def _float32_values(count: int, seed: int) -> torch.Tensor:
    """Random bit patterns, ties and near-ties of both 16-bit formats, values inside float16's
    range, its subnormals and overflow threshold, and the special values."""
    rng = np.random.default_rng(seed)
    quarter = count // 4
    anything = rng.integers(0, 1 << 32, quarter, dtype=np.uint64)
    ties = (rng.integers(0, 1 << 16, quarter, dtype=np.uint64) << 16) | rng.choice(
        np.array([0x8000, 0x7FFF, 0x8001, 0x18000, 0x0000], dtype=np.uint64), quarter
    )  # fmt: skip
    exponents = rng.integers(96, 146, quarter, dtype=np.uint64)  # float16's range and past it
    signs = rng.integers(0, 2, quarter, dtype=np.uint64) << 31
    mantissas = rng.integers(0, 1 << 23, quarter, dtype=np.uint64) & ~np.uint64(0x1FFF)
    low = rng.choice(np.array([0x1000, 0x0FFF, 0x1001, 0x3000, 0], dtype=np.uint64), quarter)
    halfish = signs | (exponents << 23) | mantissas | low
    special = np.array(
        [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFF800001,
         0x7FFFFFFF, 0x00000001, 0x807FFFFF, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F8000, 0x7F7F7FFF,
         0x477FE000, 0x477FEFFF, 0x477FF000, 0x33000000, 0x33000001, 0xB3800000],
        dtype=np.uint64,
    )  # fmt: skip
    rest = rng.integers(0, 1 << 32, count - 3 * quarter - len(special), dtype=np.uint64)
    bits = np.concatenate([anything, ties, halfish, special, rest]).astype(np.uint32)
    return torch.from_numpy(bits.view(np.float32).copy())


def _run(kernel, x, out, **constants):
    kernel[(triton.cdiv(x.numel(), BLOCK),)](x, out, x.numel(), BLOCK=BLOCK, **constants)
    return out


def _same(got: torch.Tensor, expected: torch.Tensor) -> int:
    """How many elements differ: in bits, or a NaN against a number."""
    bits = {2: torch.int16, 4: torch.int32}[got.element_size()]
    same_bits = got.view(bits) == expected.view(bits)
    both_nan = torch.isnan(got.float()) & torch.isnan(expected.float())
    return int((~(same_bits | both_nan)).sum())


def _toward_zero(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """x rounded toward zero: PyTorch's nearest value, one step toward zero where it is
    larger in magnitude than x (past the format's largest value, its largest value)."""
    nearest = x.to(dtype)
    over = nearest.double().abs() > x.double().abs()
    return torch.where(over, torch.nextafter(nearest, torch.zeros_like(nearest)), nearest)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_rounding_to_nearest_is_pytorchs_bit_for_bit(patched, dtype):
    x = _float32_values(COUNT, seed=1)
    assert x.numel() >= 10**6
    expected = x.to(dtype)
    for rounding in (None, "rtne"):
        got = _run(_convert, x, torch.empty(COUNT, dtype=dtype), ROUNDING=rounding)
        assert _same(got, expected) == 0, rounding


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_rounding_toward_zero_still_truncates(patched, dtype):
    x = _float32_values(COUNT, seed=2)
    got = _run(_convert, x, torch.empty(COUNT, dtype=dtype), ROUNDING="rtz")
    assert _same(got, _toward_zero(x, dtype)) == 0
    if dtype == torch.bfloat16:
        numbers = ~torch.isnan(x)
        truncated = (x.view(torch.int32) >> 16).to(torch.int16)
        assert torch.equal(got.view(torch.int16)[numbers], truncated[numbers])


def test_the_interpreter_alone_truncates_to_bfloat16():
    """What the change is for: without it about a quarter of the values differ."""
    x = torch.randn(4096)
    got = _run(_convert, x, torch.empty(4096, dtype=torch.bfloat16), ROUNDING=None)
    assert _same(got, x.to(torch.bfloat16)) > 4096 // 8


def test_float64_and_back_from_bfloat16(patched):
    x = _float32_values(1 << 16, seed=3)
    for dtype in (torch.float16, torch.bfloat16):
        # float32 values in float64: no double rounding for PyTorch's (float32-based) bfloat16
        got = _run(_convert, x.double(), torch.empty(x.numel(), dtype=dtype), ROUNDING=None)
        assert _same(got, x.to(dtype)) == 0, dtype
    # float64 to float16 in one rounding, as a GPU's cvt.rn.f16.f64 does (PyTorch on the CPU
    # rounds to float32 first); Python's struct rounds once too
    wide = torch.randn(1 << 16, dtype=torch.float64) * 1e3
    got = _run(_convert, wide, torch.empty(wide.numel(), dtype=torch.float16), ROUNDING=None)
    once = struct.unpack(f"<{wide.numel()}e", struct.pack(f"<{wide.numel()}e", *wide.tolist()))
    assert _same(got, torch.tensor(once, dtype=torch.float16)) == 0
    narrow = x.to(torch.bfloat16)
    got = _run(_widen, narrow, torch.empty(narrow.numel()))
    assert _same(got, narrow.float()) == 0


# --------------------------------------------------------------------------- program order


@triton.jit
def _running_total(x_ptr, partial_ptr, out_ptr, BLOCK: tl.constexpr):
    """Program i adds its block's sum to what program i - 1 left in ``partial`` (a race)."""
    pid = tl.program_id(0)
    total = tl.sum(tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK)), axis=0)
    if pid > 0:
        total += tl.load(partial_ptr + pid - 1)
    tl.store(partial_ptr + pid, total)
    tl.store(out_ptr + pid, total)


def _running_totals(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty(x.numel() // 16)
    _running_total[(out.numel(),)](x, torch.zeros_like(out), out, BLOCK=16)
    return out


def test_program_order_is_a_shuffle_that_is_never_in_order():
    """Program 0 never first and the last never last, for every seed: a kernel that needs
    either is failed by every graded run, not by three runs in four."""
    for grid in [(2, 1, 1), (3, 1, 1), (4, 1, 1), (5, 1, 1), (3, 4, 2), (1, 1, 1)]:
        count = grid[0] * grid[1] * grid[2]
        for seed in (None, *range(200)):
            order = gpu_numerics.program_order(grid, seed)
            assert sorted(order) == list(range(count))
            assert count == 1 or order != sorted(order)
            assert count == 1 or (order[0] != 0 and order[-1] != count - 1), order
            assert order == gpu_numerics.program_order(grid, seed)  # the same for the grid
    orders = {tuple(gpu_numerics.program_order((8, 1, 1), seed)) for seed in range(20)}
    assert len(orders) > 10


def test_a_race_between_programs_passes_in_order_and_fails_shuffled(patched):
    x = torch.randn(8 * 16)
    expected = x.view(8, 16).sum(1).cumsum(0)
    with gpu_numerics.in_order():
        assert torch.allclose(_running_totals(x), expected)
    assert not torch.allclose(_running_totals(x), expected)


def test_every_program_runs_once_with_its_own_ids(patched):
    @triton.jit
    def ids(out_ptr):
        x, y, z = tl.program_id(0), tl.program_id(1), tl.program_id(2)
        flat = (x * tl.num_programs(1) + y) * tl.num_programs(2) + z
        tl.store(out_ptr + flat, tl.load(out_ptr + flat) + 1 + x * 10000 + y * 100 + z)

    out = torch.zeros(3 * 4 * 2, dtype=torch.int32)
    ids[(3, 4, 2)](out)
    x, y, z = torch.meshgrid(torch.arange(3), torch.arange(4), torch.arange(2), indexing="ij")
    assert torch.equal(out, (1 + x * 10000 + y * 100 + z).flatten().int())


# A row sum whose programs each take a chunk of columns of every row and add it to the partial
# sums the program before left in the output: right only when program 0 runs first, then 1 ...
SUM_HANDED_ON = """
import torch
import triton
import triton.language as tl


@triton.jit
def handed_on_sum(x_ptr, out_ptr, n_rows, n_cols, stride, ROWS: tl.constexpr,
                  CHUNK: tl.constexpr):
    chunk = tl.program_id(0)
    rows = tl.arange(0, ROWS)
    cols = chunk * CHUNK + tl.arange(0, CHUNK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=0.0)
    part = tl.sum(x.to(tl.float32), axis=1)
    if chunk > 0:  # what the program before stored (a race on a GPU)
        part += tl.load(out_ptr + rows, mask=rows < n_rows).to(tl.float32)
    tl.store(out_ptr + rows, part.to(out_ptr.dtype.element_ty), mask=rows < n_rows)


def row_sum(x):
    out = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
    chunks = triton.cdiv(x.shape[1], 256)
    handed_on_sum[(chunks,)](x, out, x.shape[0], x.shape[1], x.stride(0),
                             ROWS=triton.next_power_of_2(x.shape[0]), CHUNK=256)
    return out


@triton.jit
def max_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=float("-inf"))
    tl.store(out_ptr + row, tl.max(x, axis=0))


def row_max(x):
    out = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
    max_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return out
"""


def _learner_package(tmp_path, monkeypatch, name: str, module: str, source: str) -> None:
    """A learner's package ``name`` on the path whose ``kernels/<module>.py`` is ``source``."""
    package = tmp_path / name
    (package / "kernels").mkdir(parents=True)
    (package / "__init__.py").write_text("import learning  # noqa: F401\n")
    (package / "kernels" / "__init__.py").write_text("")
    (package / "kernels" / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))


def test_the_checker_fails_a_kernel_whose_programs_hand_results_on(tmp_path, monkeypatch):
    """Graded, the programs run out of order: the check fails and its hint names the kernel."""
    from learning.check import kernels

    _learner_package(tmp_path, monkeypatch, "handed_on", "reductions", SUM_HANDED_ON)
    results = kernels.run("reductions", "handed_on", focus=lambda cases: [
        case for case in cases if case.check in ("sum 37x781", "sum 16x256")])  # fmt: skip
    failed = {r.name: r.message for r in results if not r.passed}
    assert "sum 16x256" not in failed, failed  # one program: nothing handed on
    message = failed["sum 37x781"]
    assert "handed_on_sum" in message and "shuffled order" in message, message
    print(message)


# --------------------------------------------------------------------------- tl.dot


def test_tf32_values_drop_the_low_13_mantissa_bits_toward_zero():
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 1 << 32, COUNT, dtype=np.uint64).astype(np.uint32)
    values = bits.view(np.float32)
    kept = gpu_numerics.tf32_values(values)
    nan = np.isnan(values)
    assert np.isnan(kept[nan]).all()
    assert (kept[~nan].view(np.uint32) == (bits[~nan] & 0xFFFFE000)).all()
    normal = ~nan & np.isfinite(values) & (np.abs(values) >= np.finfo(np.float32).tiny)
    error = np.abs(values[normal].astype(np.float64) - kept[normal]) / np.abs(values[normal])
    assert error.max() < 2.0**-10  # ten mantissa bits kept (fewer in a subnormal)
    assert (np.abs(kept[~nan]) <= np.abs(values[~nan])).all()


@triton.jit
def _dot(a_ptr, b_ptr, c_ptr, N: tl.constexpr, PRECISION: tl.constexpr):
    rows = tl.arange(0, N)
    tile = rows[:, None] * N + rows[None, :]
    a, b = tl.load(a_ptr + tile), tl.load(b_ptr + tile)
    tl.store(c_ptr + tile, tl.dot(a, b, input_precision=PRECISION))


def _product(a: torch.Tensor, b: torch.Tensor, precision: str) -> torch.Tensor:
    c = torch.empty(a.shape, dtype=torch.float32)
    _dot[(1,)](a, b, c, N=a.shape[0], PRECISION=precision)
    return c.double()


def test_a_float32_dot_in_tf32_reads_ten_mantissa_bits_and_in_ieee_all(patched):
    generator = torch.Generator().manual_seed(0)
    a, b = (torch.randn(32, 32, generator=generator) for _ in range(2))
    exact = a.double() @ b.double()
    as_tf32 = [torch.from_numpy(gpu_numerics.tf32_values(t.numpy())).double() for t in (a, b)]
    scale = exact.abs().max()
    assert (_product(a, b, "ieee") - exact).abs().max() < 1e-6 * scale
    tf32 = _product(a, b, "tf32")
    assert (tf32 - as_tf32[0] @ as_tf32[1]).abs().max() < 1e-6 * scale  # those bits, summed
    assert (tf32 - exact).abs().max() > 1e-4 * scale  # past float32's tolerance
    with gpu_numerics.exact_dots():  # the checker's rerun for its hint
        assert (_product(a, b, "tf32") - exact).abs().max() < 1e-6 * scale


def test_a_bfloat16_dot_multiplies_the_values(patched):
    generator = torch.Generator().manual_seed(1)
    a, b = (torch.randn(32, 32, generator=generator).bfloat16() for _ in range(2))
    exact = a.double() @ b.double()  # products of bfloat16 values are exact in float32
    assert (_product(a, b, "tf32") - exact).abs().max() < 1e-5 * exact.abs().max()


# --------------------------------------------------------------------------- bfloat16 arithmetic

BF16_COUNT = 1 << 17  # values per operation


@triton.jit
def _bf16_ops(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Each operation straight on bfloat16 values, as a learner may write it (no upcast)."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x, y = tl.load(x_ptr + offsets, mask=mask), tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + 0 * n + offsets, x + y, mask=mask)
    tl.store(out_ptr + 1 * n + offsets, x - y, mask=mask)
    tl.store(out_ptr + 2 * n + offsets, x * y, mask=mask)
    tl.store(out_ptr + 3 * n + offsets, tl.maximum(x, y), mask=mask)
    tl.store(out_ptr + 4 * n + offsets, tl.where(x < y, x, y), mask=mask)


@triton.jit
def _bf16_rows(x_ptr, out_ptr, COLS: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * COLS + tl.arange(0, COLS))
    tl.store(out_ptr + row * 2, tl.max(x, axis=0))
    tl.store(out_ptr + row * 2 + 1, tl.sum(x, axis=0))


def _bf16_pair(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    scale = torch.exp2(torch.randint(-20, 20, (2, BF16_COUNT), generator=generator).float())
    x, y = (torch.randn(2, BF16_COUNT, generator=generator) * scale).bfloat16()
    return x, y


def _bf16_results(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty(5 * x.numel(), dtype=torch.bfloat16)
    _bf16_ops[(triton.cdiv(x.numel(), 4096),)](x, y, out, x.numel(), BLOCK=4096)
    return out.view(5, -1)


def test_bfloat16_arithmetic_on_values_matches_torch_bit_for_bit(patched):
    """+, -, *, max and a comparison straight on bfloat16: what torch (and a GPU's bfloat16
    instructions, one rounding to nearest even) gives, for 2**17 pairs over 40 binades."""
    x, y = _bf16_pair(0)
    got = _bf16_results(x, y)
    expected = torch.stack([x + y, x - y, x * y, torch.maximum(x, y), torch.where(x < y, x, y)])
    assert torch.equal(got.view(torch.int16), expected.view(torch.int16))


def test_the_interpreters_own_bfloat16_arithmetic_adds_bit_patterns():
    """Without the graded changes the same kernel is wrong almost everywhere: the reason they
    exist (and the proof the test above can fail)."""
    x, y = _bf16_pair(1)
    wrong = (_bf16_results(x, y)[0].view(torch.int16) != (x + y).view(torch.int16)).float()
    assert wrong.mean() > 0.9


def test_bfloat16_reductions_reduce_values(patched):
    """tl.max picks the largest value (not the largest bit pattern: negatives included), and
    tl.sum adds values in bfloat16, pairwise, within bfloat16's rounding of the exact sum."""
    x = torch.randn(64, 512).bfloat16()
    out = torch.empty(64 * 2, dtype=torch.bfloat16)
    _bf16_rows[(64,)](x, out, COLS=512)
    got_max, got_sum = out.view(64, 2).unbind(1)
    assert torch.equal(got_max, x.max(dim=1).values)
    exact = x.double().sum(dim=1)
    # pairwise in bfloat16 over 512 values: 9 levels, each rounding by at most 2**-9 relative
    bound = 9 * 2.0**-9 * x.double().abs().sum(dim=1) + 1e-30
    assert ((got_sum.double() - exact).abs() <= bound).all()




def test_an_add_written_straight_on_bfloat16_passes_as_on_a_gpu(tmp_path, monkeypatch):
    """`x + y` on bfloat16 loads, without an upcast: right on a GPU, and now graded right (the
    interpreter's own arithmetic added the bit patterns and failed every bfloat16 case)."""
    from learning.check import kernels

    _learner_package(tmp_path, monkeypatch, "plain", "add", PLAIN_ADD_MODULE)
    monkeypatch.setenv("LEARNING_CHECK_SEED", "7")  # a run whose cases draw bfloat16 ones
    results = kernels.run("add", "plain")
    failed = {r.name: r.message for r in results if not r.passed and r.max_points}
    assert not failed, failed
