"""Cheating kernels: does ``learning.check.kernels`` reject each one, naming the fault?

Each cheat is a softmax implementation package written into a pytest ``tmp_path`` and graded
as the checker grades ``exercises``. Most wrap a correct Triton kernel and then cheat around
it, so what fails is the cheat, never the arithmetic. They run on a CPU, through Triton's
interpreter, in CI.
"""

from __future__ import annotations

import textwrap
import time
import uuid
from pathlib import Path

import pytest
import torch

import learning  # noqa: F401  (chooses the interpreter before triton is imported)
from learning.check import kernels

# A correct softmax every cheat can call: launch(x, y) fills y and returns it.
HONEST_KERNEL = """\
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    numerator = tl.exp(x)
    tl.store(y_ptr + row * n_cols + cols, numerator / tl.sum(numerator, axis=0), mask=mask)


def launch(x, y):
    softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return y
"""

# name -> (the cheat's softmax, the check that must fail, what its message must say)
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
        "softmax 16x256",
        "output was never written: still the NaN the checker filled in",
    ),
    "in_place_on_input": (
        """
        def softmax(x):
            return launch(x, x)  # softmax written over the input, handed back
        """,
        "softmax returns a fresh output each call",
        "output is the input x (same memory)",
    ),
    "overwrites_input": (
        """
        def softmax(x):
            y = launch(x, torch.empty_like(x))
            x.zero_()  # scribbles on the input after using it
            return y
        """,
        "softmax leaves its inputs unchanged",
        "the kernel changed its input x",
    ),
    "cache_by_pointer": (
        """
        _cache = {}


        def softmax(x):
            key = x.data_ptr()
            if key not in _cache:
                _cache[key] = launch(x, torch.empty_like(x))
            return _cache[key]
        """,
        "softmax 16x256",
        "got call 1's result back: the output was cached by pointer or shape",
    ),
    "cache_by_shape": (
        """
        _cache = {}


        def softmax(x):
            key = (tuple(x.shape), x.dtype)
            if key not in _cache:
                _cache[key] = launch(x, torch.empty_like(x))
            return _cache[key]
        """,
        "softmax 16x256",
        "got call 1's result back: the output was cached by pointer or shape",
    ),
    "lookup_table_of_checked_shapes": (
        """
        from learning import ops

        _spec = ops.get("softmax")
        # Results for the checked shapes, from inputs made with a seed of its own.
        _table = {
            (shape, dtype): torch.softmax(_spec.inputs(shape, dtype, 0)["x"].float(), -1)
            for shape in _spec.cpu_shapes
            for dtype in _spec.dtypes
        }


        def softmax(x):
            launch(x, torch.empty_like(x))
            return _table[(tuple(x.shape), x.dtype)].to(x.dtype)
        """,
        "softmax 16x256",
        "values outside tolerance",
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
    "echo": (
        """
        def softmax(x):
            launch(x, torch.empty_like(x))
            return x.clone()
        """,
        "softmax 16x256",
        "output equals the input x: the kernel copied its input",
    ),
    "pytorch_fallback": (
        """
        def softmax(x):
            return torch.softmax(x.float(), dim=-1).to(x.dtype)
        """,
        "softmax runs a Triton kernel",
        "no Triton kernel ran: the result came from PyTorch",
    ),
    "borrows_the_reference": (
        """
        from reference.kernels.softmax import softmax as reference_softmax


        def softmax(x):
            return reference_softmax(x)  # a correct Triton kernel, but not the learner's
        """,
        "softmax runs a Triton kernel",
        "are defined in reference.kernels.softmax, not in your",
    ),
    "silently_half_precision": (
        """
        def softmax(x):
            low = x.to(torch.float16)  # float32 inputs computed in float16
            return launch(low, torch.empty_like(low)).to(x.dtype)
        """,
        "softmax 16x256",
        "float32, seed",  # fails on float32 inputs ...
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
    "right_only_when_warming_up": (
        """
        _calls = [0]


        def softmax(x):
            _calls[0] += 1
            y = launch(x, torch.empty_like(x))
            return y if _calls[0] == 1 else y * 1.05
        """,
        "softmax 16x256",
        "call 1 with these values was right and call 2 was not",
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
        "softmax is deterministic and done when it returns",
        "non-deterministic: the same inputs gave different bits in call 1 and call 2",
    ),
    "finishes_in_a_background_thread": (
        """
        import threading
        import time


        def softmax(x):
            result = launch(x, torch.empty_like(x))
            y = torch.empty_like(x)

            def finish():
                time.sleep(0.005)
                y.copy_(result)

            threading.Thread(target=finish, daemon=True).start()
            return y  # returned before it holds the result: looks fast to a timer
        """,
        "softmax 16x256",
        "the output changed after the call returned",
    ),
    "patches_the_timer_on_import": (
        """
        import time

        time.perf_counter = lambda: 0.0


        def softmax(x):
            return launch(x, torch.empty_like(x))
        """,
        "softmax 16x256",
        "the implementation modified time.perf_counter",
    ),
    "patches_cuda_events_when_called": (
        """
        class InstantEvent:
            def __init__(self, *args, **kwargs):
                pass

            def record(self, *args):
                pass

            def elapsed_time(self, other):
                return 0.001


        def softmax(x):
            torch.cuda.Event = InstantEvent
            return launch(x, torch.empty_like(x))
        """,
        "softmax 16x256",
        "the implementation modified torch.cuda.Event",
    ),
    "reads_the_oracle_through_gc": (
        """
        import gc


        def softmax(x):
            launch(x, torch.empty_like(x))
            for obj in gc.get_objects():
                if (
                    type(obj) is torch.Tensor
                    and obj.dtype == torch.float64
                    and tuple(obj.shape) == tuple(x.shape)
                ):
                    return obj.to(x.dtype)
            return torch.zeros_like(x)  # found nothing to copy
        """,
        "softmax 16x256",
        "output is all zeros",
    ),
}


def make_cheat(tmp_path: Path, monkeypatch, body: str) -> str:
    package = f"cheat_{uuid.uuid4().hex[:10]}"
    module_dir = tmp_path / package / "kernels"
    module_dir.mkdir(parents=True)
    (tmp_path / package / "__init__.py").write_text("import learning  # noqa: F401\n")
    (module_dir / "__init__.py").write_text("")
    (module_dir / "softmax.py").write_text(HONEST_KERNEL + "\n" + textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    return package


@pytest.mark.parametrize("cheat", list(CHEATS))
def test_cheat_is_rejected_with_the_fault_named(cheat, tmp_path, monkeypatch):
    """Does the checker fail this cheat, and does the failing check say what the cheat did?"""
    body, check, fault = CHEATS[cheat]
    perf_counter, event = time.perf_counter, torch.cuda.Event
    results = {r.name: r for r in kernels.run("softmax", make_cheat(tmp_path, monkeypatch, body))}
    assert time.perf_counter is perf_counter and torch.cuda.Event is event  # put back
    assert not results[check].passed, results[check]
    assert fault in results[check].message, results[check].message
    assert sum(r.earned for r in results.values()) < kernels.points_for("softmax")


@pytest.mark.parametrize("cheat", ["pytorch_fallback", "borrows_the_reference"])
def test_a_result_from_another_kernel_earns_nothing(cheat, tmp_path, monkeypatch):
    """PyTorch's result, or the reference's kernel, scores zero, not just minus one property?"""
    body, _, fault = CHEATS[cheat]
    results = kernels.run("softmax", make_cheat(tmp_path, monkeypatch, body))
    assert sum(r.earned for r in results) == 0
    assert all(r.message.startswith("not graded: ") and fault in r.message for r in results)


def test_half_precision_fails_on_the_tolerance_not_on_shape_or_dtype(tmp_path, monkeypatch):
    """Is float16 arithmetic on float32 inputs caught by the tolerance itself?"""
    body, check, _ = CHEATS["silently_half_precision"]
    results = {r.name: r for r in kernels.run("softmax", make_cheat(tmp_path, monkeypatch, body))}
    message = results[check].message
    assert message.startswith("input: softmax 16x256 float32, seed ")
    assert "values outside tolerance" in message


def test_honest_kernel_passes_so_the_cheats_fail_for_their_cheat(tmp_path, monkeypatch):
    """Does the kernel every cheat wraps earn full marks on its own?"""
    body = "def softmax(x):\n    return launch(x, torch.empty_like(x))\n"
    results = kernels.run("softmax", make_cheat(tmp_path, monkeypatch, body))
    assert [r.message for r in results if not r.passed] == []
