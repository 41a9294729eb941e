"""The kernel checker (``learning.check.kernels``): does it pass the reference and name faults?

Every faulty kernel below is a small throwaway implementation package written into a pytest
``tmp_path`` and graded by its package name, exactly as the checker grades ``exercises``.
Where the fault is a kernel fault (a store past the end, an unmasked read) it is a real
``@triton.jit`` kernel run through Triton's interpreter.
"""

from __future__ import annotations

import io
import os
import textwrap
import uuid
from pathlib import Path

import graded_reference  # which worker grades the reference (tests/graded_reference.py)
import pytest
import torch

import learning  # noqa: F401  (chooses the interpreter before triton is imported)
from learning import correctness, ops
from learning.check import kernel_hints, kernels, protocol, replaying
from learning.check.kernel_guards import AllocationTrap
from learning.check.remote import RemoteModule, Session

REPO = Path(__file__).resolve().parents[2]

HEADER = """\
import torch
import triton
import triton.language as tl
"""

# A correct row softmax the faulty softmax packages build on.
SOFTMAX = HEADER + """
@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, x_stride, y_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    numerator = tl.exp(x)
    tl.store(y_ptr + row * y_stride + cols, numerator / tl.sum(numerator, axis=0), mask=mask)


def launch(x, y):
    softmax_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), y.stride(0),
                                  BLOCK=triton.next_power_of_2(x.shape[1]))
    return y
"""

ROW_MAX = """
@triton.jit
def max_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(out_ptr + row, tl.max(x, axis=0))


def row_max(x):
    out = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
    max_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return out
"""


def make_impl(tmp_path: Path, monkeypatch, **modules: str) -> str:
    """Write ``<package>/kernels/<module>.py`` files; return the importable package name."""
    package = f"faulty_{uuid.uuid4().hex[:10]}"
    kernels_dir = tmp_path / package / "kernels"
    kernels_dir.mkdir(parents=True)
    (tmp_path / package / "__init__.py").write_text("import learning  # noqa: F401\n")
    (kernels_dir / "__init__.py").write_text("")
    for module, source in modules.items():
        (kernels_dir / f"{module}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    return package


def failures(results) -> dict[str, str]:
    return {r.name: r.message for r in results if not r.passed}


# The property checks of an op, by name (learning.check.kernels), for any op.
PROPERTIES = [f"{op} {title}" for op in ops.NAMES for title in kernels._PROPERTIES.values()]


def run_only(exercise: str, impl: str, *checks: str):
    """``kernels.run(exercise, impl)`` on the planned cases of ``checks`` alone, every call of
    each (the run's ``focus``), for a test that asks of those checks and no others: each is
    graded as in a whole run, and each must be in the results (a name the plan has not would
    otherwise leave an assertion about it with nothing to fail on)."""
    results = kernels.run(exercise, impl, reference_copies=True, focus=lambda cases: [
        case for case in cases if case.check in checks])  # fmt: skip
    missing = set(checks) - {r.name for r in results}
    assert not missing, f"no planned case of {sorted(missing)}"
    return results


def reference_available(exercise: str) -> bool:
    try:
        for spec in ops.exercises()[exercise]:
            spec.kernel_function("reference")
    except Exception:
        return False
    return True


# --------------------------------------------------------------------------- the reference


FAST = tuple(name for name, specs in ops.exercises().items() if not specs[0].training)
TRAINING = tuple(name for name, specs in ops.exercises().items() if specs[0].training)


@pytest.mark.parametrize(
    "exercise",
    [*(pytest.param(name, marks=graded_reference.group(name)) for name in FAST),
     *(pytest.param(name, marks=[pytest.mark.slow, graded_reference.group(name)])
       for name in TRAINING)],
)  # fmt: skip
def test_reference_passes_every_check(exercise, reference_report):
    """Does the reference implementation earn every point of each kernel exercise?

    The results are ``kernels.run(exercise, "reference")``'s, from the checker's own check
    process (shared with test_check_kernel_paths.py and test_check_traffic.py, which read the same
    run)."""
    if not reference_available(exercise):
        pytest.skip(f"reference kernels for {exercise} do not import yet")
    results = reference_report(exercise).checks
    assert failures(results) == {}
    # shares are tenths of a point, whose sum a float holds only to its last bit
    assert sum(r.max_points for r in results) == pytest.approx(kernels.points_for(exercise))
    assert sum(r.earned for r in results) == pytest.approx(kernels.points_for(exercise))


# --------------------------------------------------------------------------- controls


def _echo(spec: ops.OpSpec, inputs: dict, label: str, shape) -> torch.Tensor:
    """An input handed back as the output: the same-named input for a gradient, else the first
    input of the output's shape, else the first column of x (a reduction's shape)."""
    name = label.removeprefix("grad_")
    if name in inputs:
        return inputs[name].detach()
    for value in inputs.values():
        if torch.is_tensor(value) and tuple(value.shape) == tuple(shape):
            return value.detach()
    return inputs["x"].detach()[:, 0].contiguous()


@pytest.mark.parametrize("spec", list(ops.OPS.values()), ids=list(ops.OPS))
def test_zeros_and_input_echo_fail_for_every_op_and_dtype(spec):
    """Can an all-zeros output, or an input handed back, ever pass the comparison policy?"""
    shape = next(s for s in spec.cpu_shapes if not spec.is_gemm or len(set(s)) == 1)
    for dtype in spec.dtypes:
        inputs = spec.inputs(shape, dtype, seed=1234)
        expected = spec.expected(inputs)
        labels = correctness.output_labels(spec)
        zeros = [torch.zeros_like(e, dtype=dtype) for e in expected]
        pairs = zip(labels, expected, strict=True)
        echo = [_echo(spec, inputs, label, e.shape) for label, e in pairs]
        for fake, what in ((zeros, "zeros"), (echo, "echo")):
            verdicts = correctness.compare_all(
                fake, expected, spec.tolerances[dtype], dtype=dtype, labels=labels
            )
            assert not all(v.passed for v in verdicts), (spec.name, dtype, what)


# --------------------------------------------------------------------------- memory faults


ADD_WITHOUT_STORE_MASK = HEADER + """
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask).to(tl.float32)
    tl.store(out_ptr + offsets, x + y)  # the fault: no mask, the last block runs past the end


def add(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out
"""


def test_store_past_the_end_is_named_with_its_distance(tmp_path, monkeypatch):
    """Does a store without a mask fail as an out-of-bounds store, saying how far it went?

    The values it returns are right; the replay of its launches, inside guard regions, shows
    where the last block's stores fell."""
    package = make_impl(tmp_path, monkeypatch, add=ADD_WITHOUT_STORE_MASK)
    results = {r.name: r for r in run_only("add", package, "add 16x256", "add 37x781")}
    assert results["add 16x256"].passed  # 4096 elements: every block is full
    message = results["add 37x781"].message
    # 37 * 781 = 28897 elements; 29 blocks of 1024 end at 29696: 799 past the end.
    assert message.startswith("input: add 37x781 ")
    assert "out-of-bounds store" in message and "a store 799 elements past the end" in message
    assert "mask the stores" in message


SUM_WITHOUT_LOAD_MASK = HEADER + ROW_MAX + """
@triton.jit
def sum_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols)  # the fault: no mask, reads past the row
    tl.store(out_ptr + row, tl.sum(x.to(tl.float32), axis=0))


def row_sum(x):
    out = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
    sum_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return out
"""


def test_unmasked_tail_read_is_named(tmp_path, monkeypatch):
    """Does a load without a mask fail with 'read past the end ... mask the tail'?"""
    package = make_impl(tmp_path, monkeypatch, reductions=SUM_WITHOUT_LOAD_MASK)
    shapes = ("16x256", "37x781", "5x3000")
    results = failures(run_only("reductions", package, "max 37x781", *(f"sum {s}" for s in shapes)))
    assert "sum 16x256" not in results  # BLOCK == N: nothing to mask
    assert "max 37x781" not in results
    assert "sum 37x781" in results
    # The rerun that moves the guards runs on the first few failures of an op (their order is
    # the run's shuffle): one of the failed sum checks says what the fault is.
    hinted = [m for name, m in results.items() if name.startswith("sum ")
              and "your kernel read past the end of the row/tensor x" in m]  # fmt: skip
    assert hinted and "mask the tail" in hinted[0].lower(), results


SUM_DOWN_THE_COLUMNS = HEADER + ROW_MAX + """
@triton.jit
def sum_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    column = tl.program_id(0)  # the fault: program i walks column i, not row i
    rows = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + rows * n_cols + column, mask=rows < n_rows, other=0.0)
    tl.store(out_ptr + column, tl.sum(x.to(tl.float32), axis=0))


def row_sum(x):
    out = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
    rows, cols = x.shape
    sum_kernel[(rows,)](x, out, rows, cols, BLOCK=triton.next_power_of_2(rows))
    return out
"""


def test_reduction_over_the_wrong_axis_is_named(tmp_path, monkeypatch):
    """Does a sum down the columns fail with a hint about the reduction axis?"""
    package = make_impl(tmp_path, monkeypatch, reductions=SUM_DOWN_THE_COLUMNS)
    shapes = ("16x256", "37x781", "5x3000")
    results = failures(run_only("reductions", package, *(f"sum {shape}" for shape in shapes)))
    for shape in shapes:
        assert "reduction down the columns (dim 0)" in results[f"sum {shape}"]


ADD_THAT_OVERWRITES_X = HEADER + """
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask).to(tl.float32)
    tl.store(out_ptr + offsets, x + y, mask=mask)
    tl.store(x_ptr + offsets, x + y, mask=mask)  # the fault: writes into its input


def add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
"""


def test_kernel_that_mutates_its_input_fails(tmp_path, monkeypatch):
    """Does a kernel that also stores into its input lose the 'inputs unchanged' check?"""
    package = make_impl(tmp_path, monkeypatch, add=ADD_THAT_OVERWRITES_X)
    results = failures(kernels.run("add", package, reference_copies=True))
    assert "input x: the kernels changed" in results["add leaves its inputs unchanged"]
    # Called again on the same tensors, it adds y to what it left in x: the repeat is wrong,
    # and then no property counts (they count only for right results).
    assert set(results) - set(PROPERTIES) <= {"add repeated calls"}


# --------------------------------------------------------------------------- unwritten outputs


def test_torch_empty_returned_unwritten_fails(tmp_path, monkeypatch):
    """Does an output that nothing stored to fail as 'never written'?"""
    source = SOFTMAX + "\n\ndef softmax(x):\n    return torch.empty_like(x)\n"
    package = make_impl(tmp_path, monkeypatch, softmax=source)
    results = kernels.run("softmax", package, reference_copies=True)
    assert any("output was never written" in m for m in failures(results).values())
    assert "softmax is not done yet" in failures(results)["softmax 16x256"]
    assert sum(r.earned for r in results) == 0  # nothing earns a point


def test_stub_with_an_empty_kernel_says_not_done_yet(tmp_path, monkeypatch):
    """Does an untouched stub (kernel body ``pass``) fail with where to start?"""
    source = HEADER + '''
@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    pass


def softmax(x):
    y = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return y
'''
    package = make_impl(tmp_path, monkeypatch, softmax=source)
    results = kernels.run("softmax", package, reference_copies=True)
    (first,) = [r.message for r in results if "this exercise is not done yet" in r.message]
    assert f"{package}/kernels/softmax.py (softmax and the kernel it launches)" in first
    assert sum(r.earned for r in results) == 0


def test_stub_raising_not_implemented_says_not_done_yet(tmp_path, monkeypatch):
    """Does a stub that raises NotImplementedError fail fast with where to start?"""
    source = HEADER + "\n\ndef softmax(x):\n    raise NotImplementedError('TODO')\n"
    package = make_impl(tmp_path, monkeypatch, softmax=source)
    results = kernels.run("softmax", package, reference_copies=True)
    (first,) = [r for r in results if "raised NotImplementedError: TODO (at " in r.message]
    assert "hint: not done yet: start with the TODOs in" in first.message
    assert all("not done yet" in r.message for r in results)
    assert sum(r.earned for r in results) == 0


def test_a_reference_replay_cancelled_at_the_end_is_no_fault_of_the_checks():
    """An exercise whose ops are not done yet replays none of their calls, so nothing waits
    for the reference's own replays (each op's traffic, for the message) and closing the
    replay service cancels those still queued. Are the results built all the same, instead of
    the check module dying of CancelledError (which a class run's CSV showed as 0/10)?"""
    from concurrent.futures import Future

    class Seeded:
        seed, copies_allowed = 1, False

    exercise = kernels._Exercise("reductions", "exercises", Seeded(), ops.exercises()["reductions"])
    cancelled = Future()
    cancelled.cancel()
    exercise.references = {op.spec.name: cancelled for op in exercise.ops}
    for op in exercise.ops:
        op.not_started = f"{op.spec.name} raised NotImplementedError\nhint: not done yet"
    results = exercise._results(None)
    traffic = [r for r in results if r.name.endswith("memory traffic")]
    assert len(traffic) == len(exercise.ops) and not any(r.passed for r in traffic)
    assert sum(r.earned for r in results) == 0


def test_cached_output_is_reported_without_costing_points(tmp_path, monkeypatch):
    """A kernel that reuses one output tensor per shape: its process reports the reuse (a
    check of no points: the report could be forged), and the replays, which give the kernels a
    fresh output each time, show that the kernels computed every result."""
    source = SOFTMAX + '''
_outputs = {}


def softmax(x):
    out = _outputs.setdefault((x.shape, x.dtype), torch.empty_like(x))
    return launch(x, out)
'''
    package = make_impl(tmp_path, monkeypatch, softmax=source)
    results = kernels.run("softmax", package, reference_copies=True)
    report = "softmax returns a fresh output each call (as its process reports; no points)"
    assert list(failures(results)) == [report]
    assert "an output is the same tensor an earlier call returned" in failures(results)[report]
    # The kernels computed every result (the replays show it): only the report fails.
    assert sum(r.earned for r in results) == pytest.approx(kernels.points_for("softmax"))


# --------------------------------------------------------------------------- op-specific hints


SOFTMAX_WITHOUT_MAX = HEADER + """
@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, x_stride, y_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    numerator = tl.exp(x)  # the fault: no max subtraction, overflows for x > 88
    tl.store(y_ptr + row * y_stride + cols, numerator / tl.sum(numerator, axis=0), mask=mask)


def softmax(x):
    y = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), y.stride(0),
                                  BLOCK=triton.next_power_of_2(x.shape[1]))
    return y
"""


def test_softmax_without_max_subtraction_fails_on_large_inputs(tmp_path, monkeypatch):
    """Does a softmax that skips the row max fail the x100 check, and every other check on its
    call with the inputs shifted by +100, each naming the fix?"""
    package = make_impl(tmp_path, monkeypatch, softmax=SOFTMAX_WITHOUT_MAX)
    results = run_only("softmax", package, "softmax large inputs (x100)", "softmax 37x781")
    failed = failures(results)
    message = failed["softmax large inputs (x100)"]
    assert "x scaled by 100" in message.splitlines()[0]
    assert "subtract the row max" in message
    message = failed["softmax 37x781"]
    assert "(inputs of large magnitude: x shifted by +100)" in message.splitlines()[0]
    assert "subtract the row max" in message
    assert sum(r.earned for r in results) == 0


SOFTMAX_WITHOUT_TAIL_MASK = SOFTMAX.replace(
    'x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)',
    "x = tl.load(x_ptr + row * x_stride + cols).to(tl.float32)  # the fault: no tail mask",
) + "\n\ndef softmax(x):\n    return launch(x, torch.empty_like(x))\n"
SOFTMAX_STEPPING_BY_N = SOFTMAX.replace(
    "row = tl.program_id(0)", "row = tl.program_id(0)  # the fault: x's rows N apart, below"
).replace("x_ptr + row * x_stride + cols", "x_ptr + row * n_cols + cols") + (
    "\n\ndef softmax(x):\n    return launch(x, torch.empty_like(x))\n"
)


def hint_lines(message: str) -> list[str]:
    return [line for line in message.splitlines() if line.startswith("hint: ")]


def test_a_missing_tail_mask_is_not_blamed_on_the_row_max(tmp_path, monkeypatch):
    """A softmax that subtracts the row max but reads past the row without a mask: does the
    large-inputs check name the unmasked read, and never ask for the max it already takes?

    Its non-finite values come from the NaN beyond the tensor, not from exp overflowing, so
    the overflow hint would send the learner to code that is right."""
    assert "the fault" in SOFTMAX_WITHOUT_TAIL_MASK
    package = make_impl(tmp_path, monkeypatch, softmax=SOFTMAX_WITHOUT_TAIL_MASK)
    check = "softmax large inputs (x100)"
    message = failures(run_only("softmax", package, check))[check]
    assert "subtract the row max" not in message, message
    assert "your kernel read past the end of the row/tensor x" in hint_lines(message)[0], message


def test_a_row_stride_of_n_gets_the_row_stride_hint_first(tmp_path, monkeypatch):
    """A softmax that steps from row to row by N: on rows that lie further apart than their
    width, is the row-stride hint the first hint, with no "mask the tail" before or after it?

    Its loads stay inside the tensor (they read the gap between rows), so moving what lies
    beyond the tensor shows nothing; row 0 right and later rows wrong is the evidence."""
    assert "the fault" in SOFTMAX_STEPPING_BY_N
    package = make_impl(tmp_path, monkeypatch, softmax=SOFTMAX_STEPPING_BY_N)
    checks = ("softmax strided rows", "softmax repeated calls", "softmax chunked rows")
    results = failures(run_only("softmax", package, *checks))
    strided = [m for m in results.values() if "strided rows (x: row stride" in m]
    assert strided, results
    for message in strided:
        first = hint_lines(message)[0]
        assert "row 0 is right and later rows are wrong" in first, message
        assert "mask the tail" not in message.lower(), message


SOFTMAX_BACKWARD_WITHOUT_ROW_SUM = SOFTMAX + """
@triton.jit
def backward_kernel(y_ptr, dy_ptr, dx_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    y = tl.load(y_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(dx_ptr + row * n_cols + cols, y * dy, mask=mask)  # the fault: no row-sum term


class Softmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = launch(x, torch.empty_like(x))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        dy = dy.contiguous()
        dx = torch.empty_like(y)
        n_rows, n_cols = y.shape
        backward_kernel[(n_rows,)](y, dy, dx, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return dx


def softmax(x):
    return Softmax.apply(x)
"""


@pytest.mark.slow
def test_softmax_backward_without_row_sum_is_named(tmp_path, monkeypatch):
    """Does dx = y * dy fail with a hint about the missing row-sum term?"""
    package = make_impl(tmp_path, monkeypatch, softmax=SOFTMAX_BACKWARD_WITHOUT_ROW_SUM)
    results = failures(run_only("softmax_train", package, "softmax_train 37x781"))
    message = results["softmax_train 37x781"]
    assert message.startswith("input: softmax_train 37x781 ")
    assert "grad_x: " in message and "outside tolerance" in message
    assert "grad_x matches y * dy: it is missing the row-sum term" in message


MATMUL_TILES = HEADER + """
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        kk = k * BK + ks
        a = tl.load(a_ptr + rows[:, None] * K + kk[None, :],
                    mask=(rows[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * N + cols[None, :],
                    mask=(kk[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)  # PRECISION
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc, mask=mask)


def matmul(a, b):
    (M, K), N = a.shape, b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
    matmul_kernel[grid](a.contiguous(), b.contiguous(), c, M, N, K, BM=32, BN=32, BK=32)
    return c
"""


MATMUL_DROPPING_THE_K_TAIL = MATMUL_TILES.replace(
    "for k in range(0, tl.cdiv(K, BK)):", "for k in range(0, K // BK):  # drops the last K % BK"
).replace("acc = tl.dot(a, b, acc)  # PRECISION", 'acc = tl.dot(a, b, acc, input_precision="ieee")')


@pytest.mark.slow
def test_matmul_dropping_the_k_tail_is_named(tmp_path, monkeypatch):
    """Does a K loop that stops at K // BLOCK_K fail with a hint about the K tail?"""
    assert "K // BK" in MATMUL_DROPPING_THE_K_TAIL and '"ieee"' in MATMUL_DROPPING_THE_K_TAIL
    package = make_impl(tmp_path, monkeypatch, matmul=MATMUL_DROPPING_THE_K_TAIL)
    results = failures(run_only("matmul", package, "matmul 64x64x64", "matmul 75x93x61"))
    assert "matmul 64x64x64" not in results
    assert "the K loop dropped the last 29" in results["matmul 75x93x61"]


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["", 'input_precision="ieee"'])
def test_a_float32_gemm_in_tf32_fails_as_on_a_gpu_and_is_named(precision, tmp_path, monkeypatch):
    """tl.dot on float32 tiles is TF32 unless asked otherwise: on a GPU that misses float32's
    tolerance, and so it does graded on the CPU, with a hint that names it. Asked for IEEE,
    the same kernel passes; its 16-bit tiles pass either way (bfloat16 ones too, multiplied
    as a GPU multiplies them)."""
    source = MATMUL_TILES.replace("acc = tl.dot(a, b, acc)  # PRECISION",
                                  f"acc = tl.dot(a, b, acc, {precision})")  # fmt: skip
    package = make_impl(tmp_path, monkeypatch, matmul=source)
    check = "matmul 75x93x61"
    results = [r for r in run_only("matmul", package, check) if r.name == check]
    if precision:
        assert results[0].passed, results[0].message
        return
    message = results[0].message
    assert "float32" in message and "in TF32" in message, message
    assert 'input_precision="ieee"' in message and "matmul_kernel" in message, message
    for dtype in ("float16", "bfloat16"):
        assert f"{dtype} " not in message.split("\n")[0], message  # only float32 failed


def test_import_error_is_reported_per_check(tmp_path, monkeypatch):
    """Does a module without the graded function fail every check, naming what is missing?"""
    package = make_impl(tmp_path, monkeypatch, add=HEADER)
    results = kernels.run("add", package, reference_copies=True)
    assert all(not r.passed for r in results)
    assert f"could not import add from {package}.kernels.add: AttributeError" in results[0].message


def test_unknown_exercise_is_a_one_line_error():
    """Does a typo in the exercise name list the choices?"""
    with pytest.raises(ValueError, match="choose one of add, reductions"):
        kernels.run("sofmax", "reference")



# --------------------------------------------------------------------------- diagnostics alone


def _rms(h, weight, eps):
    return h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps) * weight


def _row_contributions(i):
    h = i["x"] + i["residual"]
    inv_rms = torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + i["eps"])
    return i["grad_output"] * h * inv_rms


# op, shape, eps override, output label, what the mistaken kernel returns, the hint it earns
MISTAKES = {
    "residual not added": (
        "rmsnorm", (37, 781), None, "output",
        lambda i: _rms(i["x"], i["weight"], i["eps"]),
        "add the residual first (h = x + residual)",
    ),
    "eps ignored": (
        "rmsnorm", (37, 781), 0.5, "output",
        lambda i: _rms(i["x"] + i["residual"], i["weight"], 0.0),
        "RMSNorm without eps",
    ),
    "grad_weight from the first row only": (
        "rmsnorm_train", (37, 781), None, "grad_weight",
        lambda i: _row_contributions(i)[0],
        "grad_weight holds only rows 0-0's contribution",
    ),
    "grad_weight from the last program only": (
        "rmsnorm_train", (37, 781), None, "grad_weight",
        lambda i: _row_contributions(i)[32:].sum(dim=0),
        "grad_weight holds only rows 32-36's contribution: each program overwrote",
    ),
    "A transposed": (
        "matmul", (64, 64, 64), None, "output",
        lambda i: i["a"].T @ i["b"],
        "A was read transposed",
    ),
    "only the first block of columns summed": (
        "sum", (37, 781), None, "output",
        lambda i: i["x"][:, :256].sum(dim=-1),
        "reduction over only the first 256 columns",
    ),
    "softmax not normalised": (
        "softmax", (37, 781), None, "output",
        lambda i: (i["x"] - i["x"].amax(dim=-1, keepdim=True)).exp(),
        "without the division by the row sum",
    ),
}


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_typical_mistake_is_recognised(mistake):
    """Given what a typical mistaken kernel returns, does the explanation name the mistake?"""
    name, shape, eps, label, mistaken, hint = MISTAKES[mistake]
    spec, dtype = ops.get(name), torch.float32
    values = {k: v.detach() if torch.is_tensor(v) else v
              for k, v in spec.inputs(shape, dtype, seed=7).items()}
    if eps is not None:
        values["eps"] = eps
    expected = spec.expected(values)
    labels = correctness.output_labels(spec)
    as64 = {k: v.double() if torch.is_tensor(v) else v for k, v in values.items()}
    outputs = [
        (mistaken(as64) if out_label == label else ref).to(dtype)
        for out_label, ref in zip(labels, expected, strict=True)
    ]
    verdicts = correctness.compare_all(
        outputs, expected, spec.tolerances[dtype], dtype=dtype, labels=labels
    )
    assert not all(v.passed for v in verdicts)
    hints = kernel_hints.explain(
        spec, values, tuple(outputs), expected, verdicts, dtype=dtype,
        start_here="exercises/kernels/x.py",
    )
    assert any(hint in h for h in hints), hints


def _partly_unwritten(reference: torch.Tensor, region) -> torch.Tensor:
    """``reference`` with ``region`` still holding the checker's never-written fill."""
    with AllocationTrap():
        output = torch.empty_like(reference)
    written = torch.ones_like(reference, dtype=torch.bool)
    written[region] = False
    output[written] = reference[written]
    return output


@pytest.mark.parametrize(
    ("name", "region", "hint"),
    [
        ("softmax", (slice(None), slice(512, None)),
         "never written in rows 0-36 (all 37), columns 512-780 (269 of 781): only the end of "
         "each row, from column 512"),
        ("sum", (slice(12, None),),
         "never written in rows 12-36 (25 of 37): only the last 25 rows. Launch one program "
         "per row"),
    ],
)
def test_unwritten_region_is_located(name, region, hint):
    """Does a partly unwritten output say which rows and columns no store reached?"""
    spec, dtype = ops.get(name), torch.float16
    values = {"x": spec.inputs((37, 781), dtype, seed=3)["x"]}
    expected = spec.expected(values)
    output = _partly_unwritten(expected[0].to(dtype), region)
    verdicts = correctness.compare_all(
        [output], expected, spec.tolerances[dtype], dtype=dtype, labels=["output"]
    )
    hints = kernel_hints.explain(
        spec, values, (output,), expected, verdicts, dtype=dtype, start_here="",
    )
    assert any(hint in h for h in hints), hints


# --------------------------------------------------------------------------- the trust boundary


class _Pickled:
    """A class a forged reply might smuggle: weights_only must never rebuild it."""

    def __reduce__(self):
        return (os.system, ("echo pwned",))


def _payload(message) -> bytes:
    buffer = io.BytesIO()
    torch.save(message, buffer)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ({"ok": True, "value": _Pickled()}, "could not be decoded"),
        ({"ok": True, "value": torch.nn.Parameter(torch.ones(2))}, "holds a Parameter"),
        ({"ok": True, "value": torch.ones(3).to_sparse()}, "not a plain CPU tensor"),
        ({"ok": True, "value": torch.ones(1).expand(2**28)}, "too large"),
        ({"ok": True, 1: "a key that is not a string"}, "key is not a string"),
        ({"ok": True, "value": torch.float16}, "does not allow"),
    ],
    ids=["pickled object", "parameter", "sparse", "expanded", "int key", "raw dtype"],
)
def test_a_reply_that_is_not_plain_data_is_refused(message, reason):
    """Replies are untrusted: only plain data decodes, within limits."""
    with pytest.raises(protocol.BadReply, match=reason):
        protocol.loads(_payload(message))


def test_a_reply_nested_too_deep_or_too_long_is_refused():
    deep: list = []
    for _ in range(protocol.MAX_DEPTH + 2):
        deep = [deep]
    with pytest.raises(protocol.BadReply, match="nested more than"):
        protocol.loads(_payload({"value": deep}))
    with pytest.raises(protocol.BadReply, match="more than"):
        protocol.read_frame(_pipe_with(protocol.HEADER.pack(10**12)), limit=1000)


def _pipe_with(data: bytes) -> int:
    read, write = os.pipe()
    os.write(write, data)
    os.close(write)
    return read


def test_values_come_back_as_stand_ins_that_run_no_learner_code():
    """A dataclass, a named tuple, a numpy scalar, an exception: rebuilt from data alone."""
    import collections

    import numpy as np

    Pair = collections.namedtuple("Pair", "low high")
    plain = protocol.to_plain({"t": ops.Tolerance(1e-3, 2e-3), "p": Pair(1, 2),
                               "b": np.bool_(True), "d": torch.bfloat16})  # fmt: skip
    protocol.validate(plain)
    back = protocol.revive(plain)
    assert back["t"] == ops.Tolerance(1e-3, 2e-3) and type(back["t"]).__name__ == "Tolerance"
    assert tuple(back["p"]) == (1, 2) and back["p"].high == 2
    assert repr(back["p"]) == "Pair(low=1, high=2)"
    assert isinstance(back["b"], np.bool_) and back["d"] is torch.bfloat16
    try:
        raise KeyError("missing")
    except KeyError as error:
        info = protocol.describe_error(error, REPO / "tests", REPO)
    revived = protocol.revive_error(info)
    assert isinstance(revived, KeyError) and type(revived).__name__ == "KeyError"
    assert str(revived) == "'missing'" and revived.learner_frame.path.startswith("tests/")


def test_the_worker_is_not_told_the_seed(monkeypatch):
    """The run seed stays on the checker's side: the worker's environment lacks it."""
    monkeypatch.setenv("LEARNING_CHECK_SEED", "12345")
    with Session("add", "reference") as session:
        assert session.seed == 12345
        seen = RemoteModule(session, "os").call("getenv", ("LEARNING_CHECK_SEED",), {},
                                                limit_s=60)  # fmt: skip
    assert seen.returned and seen.value is None


def test_a_seed_given_by_the_caller_replays_the_same_inputs():
    """check_exercise(seed=...) (the grader's) draws every input from it, as the variable
    does; a seed that is not a whole number >= 0 is refused in one line."""
    from learning.check.runner import check_exercise

    first = check_exercise("measurement", "reference", seed=7)
    again = check_exercise("measurement", "reference", seed=7)
    assert first.passed and [c.message for c in first.checks] == [c.message for c in again.checks]
    with pytest.raises(ValueError, match="seed must be a whole number"):
        check_exercise("measurement", "reference", seed=-1)


def _trace(kinds: list[str], handed: tuple[int, ...] = ()) -> dict:
    """A trace of buffers of these kinds, and one launch handed the buffers ``handed``."""
    buffers = []
    for index, kind in enumerate(kinds):
        entry = {"id": index, "kind": kind, "name": None, "nbytes": 64, "dtype": "float32",
                 "fill": None}  # fmt: skip
        if kind == "input":
            entry.update(name="x", size=[4, 4], stride=[4, 1])
        buffers.append(entry)
    args = {f"t{i}": {"tensor": {"buffer": i, "offset": 0, "dtype": "float32"}} for i in handed}
    launches = [{"kernel": "kernels/k.py::k", "grid": [1, 1, 1], "args": args}] if handed else []
    return {"format": 1, "buffers": buffers, "launches": launches, "scalars": {}}


def _view(buffer: int, shape, stride, offset: int = 0) -> dict:
    return {"buffer": buffer, "offset": offset, "dtype": "float32", "shape": list(shape),
            "stride": list(stride)}  # fmt: skip


def test_an_output_buffer_is_replayed_as_a_fresh_poisoned_allocation():
    """Memory the call did not allocate, returned as its output: the replay gives the kernels
    a poisoned buffer instead, so only what they store can come back. An opaque output that
    only a copy or cast wrote, no kernel handed it, is left to the replay's rule for them
    (learning.check.replay.plumbing): made again from its source, or refused."""
    trace = _trace(["input", "opaque", "opaque", "opaque", "opaque"], handed=(0, 1, 2))
    trace["steps"] = [{"after": 1, "op": "_to_copy", "to": _view(4, (4, 4), (4, 1)),
                       "from": _view(1, (4, 4), (4, 1))}]  # fmt: skip
    described = [_view(1, (4, 4), (4, 1)), _view(3, (4, 4), (4, 1)), _view(4, (4, 4), (4, 1))]
    rewritten = replaying.fresh_outputs(trace, described)
    kinds = [b["kind"] for b in rewritten["buffers"]]
    assert kinds == ["input", "alloc", "opaque", "alloc", "opaque"]


@pytest.mark.parametrize("fill, kept", [(1.0, False), (-float("inf"), False), (7, False),
                                        (0.0, True), (0, True)])  # fmt: skip
def test_an_output_that_starts_as_one_value_keeps_it_only_when_it_is_zero(fill, kept):
    """A softmax one column wide is 1.0 everywhere: an output PyTorch filled with the answer
    must not survive into the replay. Zeros stay, for kernels that add into their output."""
    trace = _trace(["input", "const", "const"])
    for buffer in trace["buffers"][1:]:
        buffer["fill"] = fill
    rewritten = replaying.fresh_outputs(trace, [_view(1, (4, 4), (4, 1))])
    kinds = [b["kind"] for b in rewritten["buffers"]]
    assert kinds == ["input", "const" if kept else "alloc", "const"]  # only the output changes


# --------------------------------------------------------------------------- every op has hints


def test_every_kernel_exercise_of_the_manifest_has_typical_mistakes_for_each_op():
    """Does every op of every kernel exercise the manifest lists keep its typical mistakes
    beside its spec, where ``kernel_hints`` reads them (a failure there says what the kernel
    probably did, not just where)?"""
    from learning import manifest
    from learning.check import op_data

    graded = [name for name, exercise in manifest.load().exercises.items()
              if exercise.check == kernels.__name__]  # fmt: skip
    assert graded and set(graded) == set(ops.exercises())
    missing = [spec.name for name in graded for spec in ops.exercises()[name]
               if op_data.value(spec.name, "mistakes") is None]  # fmt: skip
    assert missing == []


def _matmul_train_case(m: int, n: int, k: int, seed: int = 7):
    spec = ops.get("matmul_train")
    inputs = spec.inputs((m, n, k), torch.float32, seed=seed)
    expected = spec.expected(inputs)
    as64 = {name: v.detach().double() for name, v in inputs.items()}
    return spec, inputs, expected, as64


@pytest.mark.parametrize("mistake", ["untransposed B", "dropped M tail", "first split only"])
def test_matmul_train_hints_name_the_gradient_mistake(mistake):
    """Do the matmul_train hints name what a wrong gradient kernel did: dA from B untransposed,
    dB whose reduction over M dropped its tail, dB that kept the first split-K slice only?"""
    m, n, k = (40, 48, 48) if mistake == "untransposed B" else (75, 40, 30)
    spec, inputs, expected, as64 = _matmul_train_case(m, n, k)
    a, b, grad_c = as64["a"], as64["b"], as64["grad_output"]
    grad_a, grad_b = (t.float() for t in expected)
    if mistake == "untransposed B":
        grad_a, hint = (grad_c @ b).float(), "grad_a matches dC @ B: B must be read transposed"
    elif mistake == "dropped M tail":
        grad_b, hint = (a[:64].T @ grad_c[:64]).float(), "dropped its tail"
    else:
        grad_b, hint = (a[:48].T @ grad_c[:48]).float(), "the first reduction slice alone"
    outputs = (grad_a, grad_b)
    verdicts = correctness.compare_all(outputs, expected, spec.tolerances[torch.float32],
                                       dtype=torch.float32, labels=("grad_a", "grad_b"))
    assert not all(v.passed for v in verdicts)
    hints = kernel_hints.explain(spec, inputs, outputs, expected, verdicts, dtype=torch.float32,
                                 start_here="")  # fmt: skip
    assert any(hint in h for h in hints), hints
