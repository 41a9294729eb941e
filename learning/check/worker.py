"""The worker: the one process that imports and runs the learner's code.

The checker (:mod:`learning.check.remote`) starts it as ``python -c <bootstrap>``: the
bootstrap reads this file's text from a pipe and runs it, so neither ``sys.argv``, nor the
stack above the learner's functions, nor ``sys.modules`` (cleaned of ``learning.check`` once
the worker's helpers are loaded, :func:`_forget_the_checker`) names the checker. Code that
behaves only when it believes it is being graded finds nothing to go on here; and nothing it
does here can change a grade, because the worker holds no verdict. It answers requests on a
pipe of its own:

* ``import``: import module M; ``attribute``: what M.N is (a callable, or its value);
* ``call``: M.F(*args, **kwargs), returning the value, the arguments as the call left them and,
  if asked, a report of the PyTorch operators it ran (:class:`~learning.check.tracing
  .Dispatches`);
* ``kernel``: one graded call of a kernel exercise (``spec.call`` of the registry), with the
  Triton launches recorded by :class:`~learning.check.replay.TraceRecorder` and every
  ``torch.empty``-style allocation poisoned by :class:`~learning.check.kernel_guards
  .AllocationTrap` (a ``path`` calls the module's wrappers with plans instead: one path of
  them that no small input takes, :func:`_forced_path`); the reply holds the outputs as the
  call returned them, whether they changed a moment later, the trace, and a few
  observations (hints only). Under Triton's interpreter a kernel worker converts to 16 bits
  as a GPU does and runs a launch's programs out of order (:mod:`learning.check.gpu_numerics`;
  ``in_order`` asks for the interpreter's own order and ``exact_dots`` for float32 ``tl.dot``
  in full precision whatever it asks, each for a hint).

Replies are plain data (:func:`learning.check.protocol.to_plain`); an exception in the
learner's code is a reply too (:func:`learning.check.protocol.describe_error`). The learner's
prints go to the log the checker shows (file descriptors 1 and 2), never into the replies.
"""

from __future__ import annotations

import functools
import importlib
import os
import signal
import sys
import threading
import time
from collections import deque
from contextlib import contextmanager, nullcontext
from pathlib import Path

RECENT_CALLS = 4  # kernel calls whose outputs stay alive (a later output in one is reused)
# A kernel call's outputs are read when it returns and again once every thread it started has
# ended (waiting this long at most) and the settle time has passed: work a call hands to a
# thread shows as a change however busy the machine is and however late the thread runs.
_THREAD_WAIT_S = 1.0


def one_intra_op_thread() -> None:
    """Run torch's CPU operators on this thread alone.

    On the course's CPU build of torch (2.13, two cores), in about a third of processes the
    second intra-op thread computes float32 ``exp`` to a relative error of 1.5e-4 instead of
    6e-8 (the half of a 37 x 781 tensor that thread takes; 5 of 12 fresh processes in one
    count, 0 of 10 with one thread). A correct ``naive_softmax`` then failed the float32
    tolerance in a quarter of check runs. This is pytorch/pytorch#188792: oneMKL picks each
    VML function's kernel on its first call, and first calls racing on several threads can
    run its low-accuracy one for a thread's chunk (the next call is right). One thread gives
    the same, accurate result in every process; the check inputs are small, so it costs
    nothing that matters (and nothing on a GPU, whose kernels do not use these threads).
    """
    import torch

    torch.set_num_threads(1)


@contextmanager
def one_thread_while():
    """:func:`one_intra_op_thread` for the duration of a block, then torch's setting back (the
    checker's own process computes its expected values so, and keeps the caller's setting)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _forget_the_checker() -> None:
    """Drop ``learning.check`` and its modules from ``sys.modules`` (they stay loaded)."""
    for name in list(sys.modules):
        if name == "learning.check" or name.startswith("learning.check."):
            del sys.modules[name]
    learning = sys.modules.get("learning")
    if learning is not None and "check" in vars(learning):
        delattr(learning, "check")


class Worker:
    """The request handlers; ``serve`` answers requests until the pipe closes."""

    def __init__(self, requests: int, replies: int, kernels: bool):
        import torch

        import learning.check.protocol as wire

        self.torch, self.wire = torch, wire
        self.requests, self.replies = requests, replies
        self.repo = Path(wire.__file__).resolve().parents[2]
        self.kept: dict[int, dict] = {}  # kernel call -> its inputs, for a later call to reuse
        self.recent: deque = deque(maxlen=RECENT_CALLS)  # outputs of the last calls, alive
        if kernels:
            from learning import ops
            from learning.check import gpu_numerics
            from learning.check.kernel_guards import AllocationTrap
            from learning.check.replay import TraceRecorder

            self.ops, self.trap, self.recorder = ops, AllocationTrap, TraceRecorder
            self.numerics = gpu_numerics
            gpu_numerics.install()  # round to 16 bits as a GPU does; programs out of order
        from learning.check.tracing import Dispatches

        self.dispatches = Dispatches
        _forget_the_checker()

    def serve(self) -> None:
        """The loop is written here, not called from :mod:`learning.check.protocol`: while the
        learner's code runs, the frames above it are this program's alone."""
        channel = self.wire.requests(self.requests, self.replies)
        request = next(channel, None)
        while request is not None:
            handler = getattr(self, f"_on_{request.get('kind')}", None)
            if handler is None:
                request = self.wire.next_request(channel, {"ok": False, "protocol": "unknown"})
                continue
            try:
                reply = handler(request)
            except KeyboardInterrupt:
                raise
            except BaseException as error:  # the learner's code raised (SystemExit too)
                reply = {"ok": False, "error": self._error(error, request)}
            request = self.wire.next_request(channel, reply)

    def _error(self, error: BaseException, request: dict) -> dict:
        root = self._package_root(request.get("package"))
        try:
            return self.wire.describe_error(error, root, self.repo)
        except Exception:  # an exception too strange to describe: its type's name will do
            return {"type": type(error).__name__, "message": "", "bases": ["Exception"]}

    def _package_root(self, package: str | None) -> Path:
        module = sys.modules.get(package or "")
        where = getattr(module, "__file__", None)
        return Path(where).resolve().parent if where else self.repo / str(package)

    def _module(self, request: dict):
        return importlib.import_module(request["module"])

    def _revive(self, value):
        """Request values: the checker's own, so its tagged objects are rebuilt as themselves."""
        return self.wire.revive(value, make_object=_checker_object)

    # -- requests ---------------------------------------------------------------------------

    def _on_import(self, request: dict) -> dict:
        module = self._module(request)
        shown = getattr(module, "__file__", None) or request["module"]
        return {"ok": True, "file": self.wire._shown(shown, self.repo)}

    def _on_attribute(self, request: dict) -> dict:
        module = self._module(request)
        missing = object()
        value = getattr(module, request["name"], missing)
        if value is missing:
            return {"ok": True, "found": False}
        if callable(value):
            return {"ok": True, "found": True, "callable": True}
        return {"ok": True, "found": True, "callable": False, "value": self.wire.to_plain(value)}

    def _on_call(self, request: dict) -> dict:
        function = getattr(self._module(request), request["function"])
        args = self._revive(request.get("args", []))
        kwargs = self._revive(request.get("kwargs", {}))
        report = None
        if request.get("report") == "dispatches":
            with self.dispatches() as trace:
                value = function(*args, **kwargs)
            report = list(trace.calls)
        else:
            value = function(*args, **kwargs)
        to_plain = self.wire.to_plain
        return {"ok": True, "value": to_plain(value), "args": to_plain(list(args)),
                "kwargs": to_plain(dict(kwargs)), "report": report}  # fmt: skip

    def _on_kernel(self, request: dict) -> dict:
        torch, to_plain = self.torch, self.wire.to_plain
        spec = self.ops.get(request["op"])
        module = self._module(request)
        function = getattr(module, request["function"])
        inputs = self._kernel_inputs(request, spec)
        path, taken = _forced_path(module, request.get("path"))
        recorder = self.recorder(self._package_root(request.get("package")))
        for name, value in inputs.items():
            recorder.add_input(name, value)
        threads_before = set(threading.enumerate())
        in_order = self.numerics.in_order() if request.get("in_order") else nullcontext()
        exact = self.numerics.exact_dots() if request.get("exact_dots") else nullcontext()
        with self.trap() as trap, recorder, in_order, exact:
            outputs = tuple(path(inputs) if path else spec.call(function, inputs))
            if torch.cuda.is_available() and torch.cuda.is_initialized():
                torch.cuda.synchronize()
        at_return = to_plain(outputs)
        _wait_for_threads(set(threading.enumerate()) - threads_before, _THREAD_WAIT_S)
        time.sleep(float(request.get("settle_s", 0.0)))
        later = to_plain(outputs)
        settled = len(later) == len(at_return) and all(
            not torch.is_tensor(a) or (torch.is_tensor(b) and _same_bits(a, b))
            for a, b in zip(at_return, later, strict=True)
        )
        observed = self._observations(inputs, outputs, trap)
        if request.get("keep"):
            self.kept[request["call"]] = inputs
        self.recent.append(outputs)
        described = recorder.describe_outputs(outputs)
        return {
            "ok": True, "outputs": at_return, "settled": settled, "trace": recorder.trace(),
            "described": described, "observed": observed, "path": taken,
        }  # fmt: skip

    def _kernel_inputs(self, request: dict, spec) -> dict:
        """The call's inputs: the checker's tensors as they came (their layout is the
        checker's), on the kernels' device, or an earlier call's tensors (refilled in place)."""
        torch = self.torch
        reuse, device = request.get("reuse"), request.get("device", "cpu")
        if reuse is None:
            inputs = {k: _on_device(v, device) for k, v in self._revive(request["inputs"]).items()}
            for name in spec.wrt:
                inputs[name].requires_grad_(True)
            return inputs
        inputs = self.kept[reuse["call"]]
        for name, value in self._revive(reuse.get("values", {})).items():
            target = inputs[name]
            value = _on_device(value, device)
            if reuse["how"] == "refill_quiet":  # new values, the tensor's version number kept
                target.data.copy_(value)
            else:
                with torch.no_grad():
                    target.copy_(value)
        if reuse.get("release"):
            del self.kept[reuse["call"]]
        return inputs

    def _observations(self, inputs: dict, outputs: tuple, trap) -> dict:
        """What this process saw: hints for a failure message, never a verdict."""
        torch = self.torch
        earlier = {_storage(o) for kept in self.recent for o in kept if type(o) is torch.Tensor}
        inputs_by_storage = {_storage(v): k for k, v in inputs.items() if torch.is_tensor(v)}
        reused, is_input = [], []
        for index, output in enumerate(outputs):
            if type(output) is not torch.Tensor:
                continue
            if _storage(output) in earlier:
                reused.append(index)
            if _storage(output) in inputs_by_storage:
                is_input.append([index, inputs_by_storage[_storage(output)]])
        stray = []
        for buffer in trap.buffers:
            before, after = buffer.stray_stores()
            if before or after:
                stray.append([buffer.label, before, after])
        return {"reused_outputs": reused, "outputs_are_inputs": is_input, "stray": stray}


def _forced_path(module, path: dict | None):
    """A call down one path of the module's own wrappers: ``steps`` call its functions in
    turn, each with a plan its own plan class (``module.RowPlan``) made from ``plans``.
    Returns ``(call, "forced")``, or ``(None, why)`` where the module has no such hook (the
    graded call is then the ordinary one)."""
    import inspect

    import torch

    if not path:
        return None, None
    try:
        plans = {}
        for role, made in path["plans"].items():
            plans[role] = getattr(module, made["class"])(**made["fields"])
        steps = []
        for step in path["steps"]:
            function = getattr(module, step["function"])
            if step.get("plan") and "plan" not in inspect.signature(function).parameters:
                return None, f"{step['function']} takes no plan"
            steps.append((function, step))
    except Exception as error:  # no such class or function, or its plan refused the fields
        return None, f"{type(error).__name__}: {error}"

    def call(inputs: dict) -> tuple:
        values = {k: v.detach() if torch.is_tensor(v) else v for k, v in inputs.items()}
        with torch.no_grad():
            for function, step in steps:
                kwargs = dict(step.get("kwargs", {}))
                if step.get("plan"):
                    kwargs["plan"] = plans[step["plan"]]
                result = function(*(values[name] for name in step["args"]), **kwargs)
                names = step["results"]
                results = (result,) if len(names) == 1 else result
                values.update(zip(names, results, strict=True))
        return tuple(values[name] for name in path["outputs"])

    return call, "forced"


def _on_device(value, device: str):
    """A tensor the checker sent, on the kernels' device with the same layout in its storage."""
    import torch

    if not torch.is_tensor(value) or device == "cpu":
        return value
    flat = torch.empty(0, dtype=value.dtype).set_(value.untyped_storage())
    return flat.to(device).as_strided(value.shape, value.stride(), value.storage_offset())


def _storage(tensor) -> int:
    return tensor.untyped_storage().data_ptr()


def _wait_for_threads(threads: set, limit_s: float) -> None:
    """Join ``threads`` (those a call started), all within ``limit_s``."""
    deadline = time.monotonic() + limit_s
    for thread in threads:
        if thread is not threading.current_thread():
            thread.join(max(0.0, deadline - time.monotonic()))


def _same_bits(a, b) -> bool:
    import torch

    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


def _checker_object(module: str, name: str, fields: dict):
    """A dataclass the checker passed as an argument (e.g. ``learning.ops.Tolerance``)."""
    if not module.startswith("learning."):
        return None
    cls = getattr(importlib.import_module(module), name, None)
    return cls(**fields) if isinstance(cls, type) else None


def _say_where(prefix: str, signum, frame) -> None:
    """Asked before a stop for taking too long: write the kernel and the program Triton's
    interpreter is running, and the grid, to the log (one line starting with ``prefix``). The
    learner's code could replace this handler: what it writes is a hint in a message, never a
    verdict."""
    kernel, grid = None, None
    while frame is not None:
        runner = frame.f_locals.get("self")
        if frame.f_code.co_name == "__call__" and hasattr(runner, "fn") and (
            "grid" in frame.f_locals
        ):
            kernel, grid = getattr(runner.fn, "__name__", None), frame.f_locals.get("grid")
            break
        frame = frame.f_back
    interpreter = sys.modules.get("triton.runtime.interpreter")
    if kernel is None or interpreter is None:
        line = ("not inside a kernel Triton's interpreter runs: Python code around the "
                "launches, or on a GPU a wait for a kernel that does not end")  # fmt: skip
    else:
        program = getattr(interpreter.interpreter_builder, "grid_idx", None)
        line = f"kernel {kernel}, program {tuple(program) if program else '?'} of grid {grid}"
    sys.stderr.write(f"\n{prefix}{line}\n")
    sys.stderr.flush()


def main(program: int, requests: int, replies: int, kernels: bool) -> None:
    """Entry point of the bootstrap (:mod:`learning.check.remote`), which has read this program
    from the descriptor ``program`` and closed it."""
    os.dup2(2, 1)  # the learner's prints, Python's and C's alike, go to the log
    sys.stdout = sys.stderr
    from learning.check.protocol import WHERE_PREFIX, WHERE_SIGNAL

    # Before any learner code, and with everything it needs imported: a handler must not import.
    signal.signal(WHERE_SIGNAL, functools.partial(_say_where, WHERE_PREFIX))
    one_intra_op_thread()
    Worker(requests, replies, kernels).serve()
    sys.stderr.flush()
    # Skip interpreter shutdown: a thread or an atexit hook the learner's code left behind must
    # not hold the process after the last reply.
    os._exit(0)
