"""Cheating kernels: does ``learning.check.kernels`` reject each one, naming the fault?

Each cheat is a softmax implementation package written into a pytest ``tmp_path`` and graded
as the checker grades ``exercises``: its code runs only in the worker process, the verdict is
reached here. Most wrap a correct Triton kernel and then cheat around it, so what fails is the
cheat, never the arithmetic. They run on a CPU, through Triton's interpreter, in CI. One test a
family, each asserting the reason its message gives.
"""

from __future__ import annotations

import json
import re
import textwrap
import uuid
from pathlib import Path

import pytest
import torch
from stopwatch import Stopwatch  # a wall-clock limit scaled by the machine's pace

import learning  # noqa: F401  (chooses the interpreter before triton is imported)
from learning.check import kernels
from learning.check.model import CheckResult
from learning.check.runner import check_exercise

# A correct softmax every cheat can call: launch(x, y) fills y and returns it.
HONEST_KERNEL = """\
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, x_stride, y_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    numerator = tl.exp(x)
    y = numerator / tl.sum(numerator, axis=0)
    tl.store(y_ptr + row * y_stride + cols, y, mask=mask)


@triton.jit
def noop_kernel(y_ptr, n):
    pass


def launch(x, y):
    softmax_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), y.stride(0),
                                  BLOCK=triton.next_power_of_2(x.shape[1]))
    return y


def decoy(x):
    noop_kernel[(1,)](x, x.numel())  # a launch that does nothing
"""

NOT_YOURS = "not graded: the result did not come from your own Triton kernels"
REPLAYED = "replaying only your kernels' launches on new inputs gave a different result"


def make_cheat(tmp_path: Path, monkeypatch, body: str, header: str = HONEST_KERNEL) -> str:
    package = f"cheat_{uuid.uuid4().hex[:10]}"
    module_dir = tmp_path / package / "kernels"
    module_dir.mkdir(parents=True)
    (tmp_path / package / "__init__.py").write_text("import learning  # noqa: F401\n")
    (module_dir / "__init__.py").write_text("")
    (module_dir / "softmax.py").write_text(header + "\n" + textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    return package


def grade(tmp_path, monkeypatch, body: str, exercise: str = "softmax") -> dict[str, CheckResult]:
    """The checks of ``exercise`` on the cheat, as ``python -m learning.check`` grades it."""
    package = make_cheat(tmp_path, monkeypatch, body)
    report = check_exercise(exercise, package, extra_path=[tmp_path])
    return {r.name: r for r in report.checks}


def earned(results: dict[str, CheckResult]) -> float:
    return sum(r.earned for r in results.values())


def messages(results: dict[str, CheckResult]) -> str:
    return "\n".join(r.message for r in results.values() if not r.passed)


# --------------------------------------------------------------------------- no verdict to forge


FORGERIES = """
import json
import os
import sys

import torch.overrides

# Everything that once decided a verdict inside the check process, patched on import:
json.dumps = lambda *args, **kwargs: '[{"name": "softmax (forged)", "passed": true}]'
try:
    import learning.check.model as model

    model.CheckResult.as_dict = lambda self: {"name": self.name, "passed": True, "points": 10}
except Exception:
    pass
torch.Tensor.__sub__ = lambda self, other: torch.zeros_like(self)  # every difference 0


class Agreeable(torch.overrides.TorchFunctionMode):  # float64 differences: always 0
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in (torch.Tensor.__sub__, torch.sub, torch.Tensor.abs, torch.abs):
            return torch.zeros_like(args[0])
        return func(*args, **(kwargs or {}))


Agreeable().__enter__()


def softmax(x):
    return torch.empty_like(x)  # no kernel work at all
"""


def test_verdict_forgery_inside_the_worker_earns_nothing(tmp_path, monkeypatch):
    """json.dumps, CheckResult, Tensor.__sub__ and a TorchFunctionMode patched where the
    learner's code runs: the worker holds no verdict, so nothing changes, and the output it
    left unwritten fails as such."""
    results = grade(tmp_path, monkeypatch, FORGERIES)
    assert earned(results) == 0
    assert "softmax (forged)" not in results
    assert "output was never written" in messages(results)
    assert "softmax is not done yet" in results["softmax 16x256"].message
    assert json.dumps([1]) == "[1]"  # the checker's own process is untouched
    assert torch.equal(torch.ones(2) - torch.ones(2), torch.zeros(2))


def test_a_forged_reply_written_to_every_descriptor_earns_nothing(tmp_path, monkeypatch):
    """The old trick (a results line on the saved stdout, then os._exit) and its new form (a
    well-framed reply claiming the right outputs, on every open descriptor): either the worker
    ends without a reply, or what it sent is read as data and shown false by the replay."""
    body = """
    import io
    import os
    import struct

    def _forge(reply):
        buffer = io.BytesIO()
        torch.save(reply, buffer)
        frame = struct.pack(">Q", len(buffer.getvalue())) + buffer.getvalue()
        for fd in range(3, 64):
            try:
                os.write(fd, b"@@learning.check results@@ [] " + frame)
            except OSError:
                pass

    _forge({"ok": True, "forged": True})
    os._exit(0)


    def softmax(x):
        return launch(x, torch.empty_like(x))
    """
    results = grade(tmp_path, monkeypatch, body)
    assert earned(results) == 0
    assert list(results) == ["check process"]
    message = results["check process"].message
    assert "without replying" in message or "its reply was refused" in message


def test_a_reply_forged_after_each_call_earns_nothing(tmp_path, monkeypatch):
    """A reply with correct outputs computed by PyTorch and an empty trace, sent on every
    descriptor before the call returns: the replay finds no kernel behind it."""
    body = """
    import io
    import os
    import struct


    def softmax(x):
        y = torch.softmax(x.float(), dim=-1).to(x.dtype)
        buffer = io.BytesIO()
        torch.save({"ok": True, "outputs": (y,), "settled": True, "described": [],
                    "trace": {"format": 1, "buffers": [], "launches": [], "scalars": {}}},
                   buffer)
        frame = struct.pack(">Q", len(buffer.getvalue())) + buffer.getvalue()
        for fd in range(3, 64):
            try:
                os.fstat(fd)
                os.write(fd, frame)
            except OSError:
                pass
        return y
    """
    results = grade(tmp_path, monkeypatch, body)
    assert earned(results) == 0
    assert NOT_YOURS in messages(results) or "reply was refused" in messages(results)


# --------------------------------------------------------------------------- not your kernels

# name -> (the cheat, the exercise, what the verdict must say). Every one of these returns the
# right values; the replay of its kernels on hidden inputs shows they did not compute them.
NOT_YOURS_CHEATS = {
    "a no-op launch, then PyTorch's result": (
        """
        def softmax(x):
            decoy(x)
            return torch.softmax(x.float(), dim=-1).to(x.dtype)
        """,
        "softmax", "a tensor PyTorch computed",
    ),
    "PyTorch behind try/except": (
        """
        def softmax(x):
            try:
                if x.shape[1] > 1024:
                    raise ValueError("too wide for my kernel")
                return launch(x, torch.empty_like(x))
            except Exception:
                return torch.softmax(x.float(), dim=-1).to(x.dtype)
        """,
        "softmax", "no Triton kernel ran: the result came from PyTorch",
    ),
    "the reference's kernel behind a decoy launch": (
        """
        from reference.kernels.softmax import softmax as reference_softmax


        def softmax(x):
            decoy(x)
            return reference_softmax(x)  # a correct Triton kernel, but not the learner's
        """,
        "softmax", "a kernel defined outside your",
    ),
    "a reference kernel relabelled as yours": (
        """
        from reference.kernels import softmax as reference

        kernel = reference._softmax_fwd_kernel
        kernel.__module__ = kernel.fn.__module__ = __name__
        kernel.fn.__qualname__ = "my_softmax_kernel"


        def softmax(x):
            y = torch.empty_like(x)
            kernel[(x.shape[0],)](x, y, x.shape[0], x.stride(0), y.stride(0), N=x.shape[1],
                                  BLOCK=triton.next_power_of_2(x.shape[1]), ROWS=1)
            return y
        """,
        "softmax", "_softmax_fwd_kernel, a kernel defined outside your",
    ),
    "work done in a child process": (
        """
        import os
        import subprocess
        import sys
        import tempfile


        def softmax(x):
            decoy(x)
            folder = tempfile.mkdtemp()
            given, result = os.path.join(folder, "x.pt"), os.path.join(folder, "y.pt")
            torch.save(x.detach().clone(), given)
            code = (f"import torch; x = torch.load({given!r}); "
                    f"torch.save(torch.softmax(x.float(), -1).to(x.dtype), {result!r})")
            subprocess.run([sys.executable, "-c", code], check=True)
            return torch.load(result)
        """,
        "softmax", "a tensor PyTorch computed",
    ),
    "a Triton forward with a PyTorch backward": (
        """
        class Softmax(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(y := launch(x, torch.empty_like(x)))
                return y

            @staticmethod
            def backward(ctx, dy):
                return torch._softmax_backward_data(dy, ctx.saved_tensors[0], -1, dy.dtype)


        def softmax(x):
            return Softmax.apply(x)
        """,
        "softmax_train", "a tensor PyTorch computed",
    ),
    "the kernel for the first 64 rows, PyTorch for the rest": (
        """
        def softmax(x):
            y = torch.softmax(x.float(), dim=-1).to(x.dtype)
            launch(x[:64], y[:64])  # the kernel's share: as many rows as the old checks had
            return y
        """,
        "softmax", REPLAYED,
    ),
    "right for 40 calls, then no work": (
        """
        _calls = [0]


        def softmax(x):
            _calls[0] += 1
            if _calls[0] <= 40:
                return launch(x, torch.empty_like(x))
            return torch.softmax(x.float(), dim=-1).to(x.dtype)  # no kernel any more
        """,
        "softmax", "no Triton kernel ran: the result came from PyTorch",
    ),
    "a cache keyed on pointer, layout and version": (
        """
        _cache = {}


        def softmax(x):
            key = (x.data_ptr(), tuple(x.shape), x.stride(), x.dtype, x._version)
            if key not in _cache:
                _cache[key] = launch(x, torch.empty_like(x))
            return _cache[key]
        """,
        "softmax", "no Triton kernel ran",
    ),
    # Copies and casts are made again in the replay (learning/check/replay/plumbing.py), from
    # the replay's own tensors: an answer PyTorch computed does not pass through one.
    "PyTorch's softmax passed through .to": (
        """
        def softmax(x):
            decoy(x)
            return torch.softmax(x.double(), dim=-1).to(x.dtype)  # always a copy and a cast
        """,
        "softmax", "is a tensor PyTorch computed (.to()",
    ),
    "PyTorch's softmax made contiguous": (
        """
        def softmax(x):
            decoy(x)
            return torch.softmax(x.float(), dim=-1).to(x.dtype).t().contiguous().t()
        """,
        "softmax", "is a tensor PyTorch computed (.clone() or .contiguous()",
    ),
    "a clone of PyTorch's answer": (
        """
        def softmax(x):
            decoy(x)
            return torch.softmax(x.float(), dim=-1).to(x.dtype).clone()
        """,
        "softmax", "is a tensor PyTorch computed (.clone() or .contiguous()",
    ),
    "PyTorch's answer copied into an output": (
        """
        def softmax(x):
            y = torch.empty_like(x)
            decoy(x)
            y.copy_(torch.softmax(x.float(), dim=-1).to(x.dtype))
            return y
        """,
        "softmax", "a tensor PyTorch computed (torch.empty_like",
    ),
    "the kernel's rows and PyTorch's, cast together": (
        """
        def softmax(x):
            y32 = torch.empty(x.shape, dtype=torch.float32)
            rows = min(8, x.shape[0])
            launch(x[:rows], y32[:rows])
            y32[rows:] = torch.softmax(x[rows:].float(), dim=-1)
            return y32.to(x.dtype)
        """,
        "softmax", REPLAYED,
    ),
    "PyTorch's gradient cast by autograd": (
        """
        class Softmax(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(y := launch(x, torch.empty_like(x)))
                return y

            @staticmethod
            def backward(ctx, dy):
                (y,) = ctx.saved_tensors
                y, dy = y.double(), dy.double()
                return y * (dy - (y * dy).sum(dim=-1, keepdim=True))  # autograd casts it back


        def softmax(x):
            return Softmax.apply(x)
        """,
        "softmax_train", "a tensor PyTorch computed",
    ),
    # Honest when it sees the checker (its modules, its name on the command line or the
    # stack), a cheat otherwise: the worker shows it none of them.
    "honest only under the checker": (
        """
        import inspect
        import sys


        def _checked():
            if any(name.startswith("learning.check") for name in sys.modules):
                return True
            if any("learning.check" in arg or "learning/check" in arg for arg in sys.argv):
                return True
            return any("learning/check" in frame.filename or "learning.check" in str(
                frame.frame.f_globals.get("__name__")) for frame in inspect.stack())


        def softmax(x):
            if _checked():
                return launch(x, torch.empty_like(x))
            decoy(x)
            return torch.softmax(x.float(), dim=-1).to(x.dtype)
        """,
        "softmax", "a tensor PyTorch computed",
    ),
}


@pytest.mark.parametrize("cheat", list(NOT_YOURS_CHEATS))
def test_a_result_your_kernels_did_not_compute_earns_nothing(cheat, tmp_path, monkeypatch):
    """Right values from PyTorch, a cache, another package's kernel, another process, a kernel
    that covers only the inputs it expected: the exercise earns nothing, saying why."""
    body, exercise, reason = NOT_YOURS_CHEATS[cheat]
    results = grade(tmp_path, monkeypatch, body, exercise)
    assert earned(results) == 0
    shape_check = results[f"{exercise} 16x256"]
    assert shape_check.message.startswith(NOT_YOURS), shape_check.message
    assert reason in shape_check.message, shape_check.message


@pytest.mark.parametrize("seed", ["1", "7"])
def test_an_answer_that_is_one_value_everywhere_is_not_taken_from_pytorch(seed, tmp_path,
                                                                          monkeypatch):
    """A softmax one column wide is 1.0 whatever the input: an output made by ``torch.ones``
    holds the answer before any kernel runs. The kernel here covers the first row only; the
    replays hand it poisoned memory, so the rows it never stored show. Seed 1 once drew the
    many-rows case one column wide, which this cheat then passed."""
    monkeypatch.setenv("LEARNING_CHECK_SEED", seed)
    body = """
    def softmax(x):
        if x.shape[1] > 1:
            return launch(x, torch.empty_like(x))
        y = torch.ones_like(x)  # the whole answer, for a one-column input
        launch(x[:1], y[:1])  # and a kernel that covers one row of it
        return y
    """
    results = grade(tmp_path, monkeypatch, body)
    assert earned(results) == 0
    assert REPLAYED in messages(results), messages(results)


KEYED_KERNEL = """
@triton.jit
def keyed_kernel(x_ptr, y_ptr, n_cols, x_stride, y_stride, key, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    y = tl.exp(x) / tl.sum(tl.exp(x), axis=0)
    first = tl.load(x_ptr).to(tl.float32)
    y = tl.where(first == key, y, y * 0.5)  # right only for the input the key was taken from
    tl.store(y_ptr + row * y_stride + cols, y, mask=mask)


def softmax(x):
    y = torch.empty_like(x)
    keyed_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), y.stride(0), float(x[0, 0]),
                                BLOCK=triton.next_power_of_2(x.shape[1]))
    return y
"""


def test_kernels_right_only_on_the_input_they_were_given_earn_nothing(tmp_path, monkeypatch):
    """A kernel handed a key taken from its input (a scalar the replay keeps) is right on that
    input and wrong on any other. Its replay on the call's own input stores exactly what the call
    returned, so the kernels did compute it: every check fails as wrong on new inputs, and
    nothing is left to earn."""
    results = grade(tmp_path, monkeypatch, KEYED_KERNEL)
    assert earned(results) == 0
    shape_check = results["softmax 16x256"]
    assert "right on this input, wrong on new inputs" in shape_check.message, shape_check.message
    assert not shape_check.message.startswith(NOT_YOURS)


def test_correct_only_on_the_registry_shapes_fails_the_drawn_shapes(tmp_path, monkeypatch):
    """A block size looked up for the registry's widths, too small elsewhere."""
    body = """
    _BLOCKS = {256: 256, 781: 1024, 3000: 4096}


    def softmax(x):
        y = torch.empty_like(x)
        block = _BLOCKS.get(x.shape[1], 256)
        softmax_kernel[(x.shape[0],)](x, y, min(x.shape[1], block), x.stride(0), y.stride(0),
                                      BLOCK=block)
        return y
    """
    results = grade(tmp_path, monkeypatch, body)
    assert all(results[f"softmax {shape}"].passed for shape in ("16x256", "37x781", "5x3000"))
    message = results["softmax rows past 4096 (float32)"].message
    assert not results["softmax rows past 4096 (float32)"].passed
    assert "never written" in message or "outside tolerance" in message
    assert 0 < earned(results) < kernels.points_for("softmax")


# --------------------------------------------------------------------------- a kernel that hangs


def test_a_hung_kernel_fails_its_check_and_the_others_still_run(tmp_path, monkeypatch):
    """A kernel that never returns on one shape: stopped there, and the other checks still run
    (in a fresh process) and say they were right."""
    body = """
    @triton.jit
    def hanging_kernel(x_ptr, y_ptr, n_cols, x_stride, y_stride, BLOCK: tl.constexpr):
        i = 0
        while i < n_cols:  # n_cols 256: the loop never moves on
            i = i * 1 + (n_cols != 256)
        softmax_kernel(x_ptr, y_ptr, n_cols, x_stride, y_stride, BLOCK)


    def softmax(x):
        if tuple(x.shape) == (16, 256):
            y = torch.empty_like(x)
            hanging_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), y.stride(0),
                                          BLOCK=triton.next_power_of_2(x.shape[1]))
            return y
        return launch(x, torch.empty_like(x))
    """
    # a shorter base limit on the CPU (3 s, not 10, plus the same second per 2048 elements),
    # so that the wait is short; the other calls take well under a second each
    per_second = kernels._CALL_LIMIT_S["cpu"][1]
    monkeypatch.setitem(kernels._CALL_LIMIT_S, "cpu", (3.0, per_second))
    with Stopwatch() as watch:
        results = grade(tmp_path, monkeypatch, body)
    assert watch.elapsed < watch.limit(60), watch.said(60)
    message = results["softmax 16x256"].message
    assert message.startswith("input: softmax 16x256 ") and "did not return within" in message
    # where it was: the worker, asked before it was stopped, names the kernel and its program
    # (whichever ran first: a launch's programs run in a shuffled order, and each one hangs)
    assert re.search(r"kernel hanging_kernel, program \(\d+, 0, 0\) of grid \(16, 1, 1\)",
                     message), message  # fmt: skip
    # the others ran and were right, and earn nothing: a hang costs its path's whole share
    for check in ("softmax 37x781", "softmax odd widths"):
        assert results[check].message.startswith("right on every input of this check, but a "
                                                 "call of softmax 16x256 did not return")
        assert results[check].earned == 0


# --------------------------------------------------------------------------- classic faults


def _finishing_later(delay_s: float) -> str:
    """A softmax that returns its output before it holds the result (which looks fast to a
    timer) and copies the result in on a thread ``delay_s`` later."""
    return f"""
        import threading
        import time


        def softmax(x):
            result = launch(x, torch.empty_like(x))
            y = torch.empty_like(x)

            def finish():
                time.sleep({delay_s})
                y.copy_(result)

            threading.Thread(target=finish, daemon=True).start()
            return y
        """


# name -> (the cheat, the check that must fail (None: some check), what its message says)
CHEATS = {
    "stale_memory": (
        """
        def softmax(x):
            # The reference result lands in memory that is freed, hoping torch.empty hands
            # the same block back still holding it.
            stale = torch.softmax(x.float(), dim=-1).to(x.dtype)
            del stale
            return torch.empty_like(x)
        """,
        None,  # the first input it meets says it, the others are not run
        "output was never written: still the NaN the checker filled in",
    ),
    "in_place_on_input": (
        """
        def softmax(x):
            return launch(x, x)  # softmax written over the input, handed back
        """,
        "softmax leaves its inputs unchanged",
        "input x: the kernels changed",
    ),
    "zeros": (
        """
        def softmax(x):
            launch(x, torch.empty_like(x))
            return torch.zeros_like(x)
        """,
        "softmax 16x256",
        "output is all zeros",
    ),
    "tensor_subclass": (
        """
        class Sneaky(torch.Tensor):
            pass


        def softmax(x):
            return launch(x, torch.empty_like(x)).as_subclass(Sneaky)
        """,
        "softmax 16x256",
        "output is a tensor subclass (Sneaky); return a plain torch.Tensor",
    ),
    "lazy_result": (
        """
        class Lazy:
            def __init__(self, x):
                self.x = x

            def __getattr__(self, name):
                return getattr(launch(self.x, torch.empty_like(self.x)), name)


        def softmax(x):
            return Lazy(x)
        """,
        "softmax 16x256",
        "output is a Lazy, not a torch.Tensor",
    ),
    "nondeterministic": (
        """
        import random


        def softmax(x):
            # Stands in for a read of uninitialized memory or a race: one element's last
            # bit differs from call to call, well inside the tolerance.
            y = launch(x, torch.empty_like(x))
            bits = y.view({2: torch.int16, 4: torch.int32}[y.element_size()]).view(-1)
            bits[random.randrange(bits.numel())] ^= 1
            return y
        """,
        "softmax is deterministic",
        "your function returned something other than what your kernels stored",
    ),
    # 5 ms after the call: on a busy machine the thread can copy before the worker first reads
    # the output, and then the copy is PyTorch's result with no kernel's store behind it. Either
    # way it earns nothing; which of the two the message names depends on the machine's load.
    "finishes_in_a_background_thread": (
        _finishing_later(0.005), "softmax 16x256",
        ("the output changed after the call returned",
         "the result did not come from your own Triton kernels"),
    ),
    # The same, with the copy made long after any fixed settle time: seen all the same, since
    # the outputs are read again only once the threads the call started have ended.
    "finishes_in_a_late_background_thread": (
        _finishing_later(0.3), "softmax 16x256", "the output changed after the call returned",
    ),
}


@pytest.mark.parametrize("cheat", list(CHEATS))
def test_classic_fault_is_rejected_with_the_fault_named(cheat, tmp_path, monkeypatch):
    """Does the checker fail this cheat, and does the failing check say what the cheat did?"""
    body, check, fault = CHEATS[cheat]
    results = grade(tmp_path, monkeypatch, body)
    text = messages(results) if check is None else results[check].message
    assert check is None or not results[check].passed, results[check]
    faults = (fault,) if isinstance(fault, str) else fault
    assert any(named in text for named in faults), text
    assert earned(results) < kernels.points_for("softmax")


def test_honest_kernel_passes_so_the_cheats_fail_for_their_cheat(tmp_path, monkeypatch):
    """Does the kernel every cheat wraps earn full marks on its own?"""
    body = "def softmax(x):\n    return launch(x, torch.empty_like(x))\n"
    results = grade(tmp_path, monkeypatch, body)
    assert [r.message for r in results.values() if not r.passed] == []
    assert earned(results) == pytest.approx(kernels.points_for("softmax"))  # tenths, summed


def test_a_cheat_that_rewrites_a_file_the_checker_runs_earns_nothing(tmp_path, monkeypatch):
    """The worker runs as the checker's user: it could edit a file that a later process of the
    checker (the replay, the next learner's worker) loads. A file the checker has loaded is
    watched; an edit is found after the worker has ended, mtime put back or not."""
    course = tmp_path / "course_part"
    course.mkdir()
    (course / "course_module.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(course))
    import course_module  # noqa: F401  (loaded by the checker: watched)

    target = course / "course_module.py"
    status = target.stat()
    body = f"""
        import os
        os.utime({str(target)!r}, ns=({status.st_atime_ns}, {status.st_mtime_ns}))
        with open({str(target)!r}, "a") as handle:
            handle.write("VALUE = 2\\n")
        os.utime({str(target)!r}, ns=({status.st_atime_ns}, {status.st_mtime_ns}))

        def softmax(x):
            return launch(x, torch.empty_like(x))
    """
    try:
        checks = grade(tmp_path, monkeypatch, body)
    finally:
        import sys

        sys.modules.pop("course_module", None)
    assert not any(c.passed for c in checks.values())
    assert all("changed files the checker itself runs" in c.message for c in checks.values())


def test_a_process_left_behind_by_the_worker_is_ended(tmp_path, monkeypatch):
    """A child that leaves the worker's process group (setsid) outlives a group kill; the
    checker is the subreaper of its children's orphans and ends it."""
    (tmp_path / "pids").mkdir()
    pid_file = tmp_path / "pids" / "escaped"
    body = f"""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                open({str(pid_file)!r}, "w").write(str(os.getpid()))
                time.sleep(300)
            os._exit(0)

        def softmax(x):
            return launch(x, torch.empty_like(x))
    """
    checks = grade(tmp_path, monkeypatch, body)
    assert all(c.passed for c in checks.values() if c.max_points), "the honest kernel failed"
    escaped = int(pid_file.read_text())
    assert not Path(f"/proc/{escaped}").exists(), "the worker's escaped process outlived the check"
