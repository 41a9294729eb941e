"""The process where a learner's function runs for kernel-bench, once per case, never timed.

kernel-bench (``learning.bench.learner``) starts it with the checker's process machinery
(:class:`learning.check.remote.Child`: this file's text read from a pipe, stdin closed, a
session of its own, a clean environment, a time limit per request) and speaks the checker's
wire format (:mod:`learning.check.protocol`: framed ``torch.save`` payloads, read back on the
benchmark's side with ``weights_only=True`` and checked as plain data). Two requests:

* ``import``: import the learner's module M (its error, if it fails to import);
* ``bench_kernel``: make the op's inputs of one case (shape, dtype, seed, device), call the
  learner's function on them once with every Triton launch recorded
  (:class:`~learning.check.replay.TraceRecorder`) and ``torch.empty``-style allocations
  poisoned; reply with the trace, where the outputs live, and the files of the package and of
  the course's ``reference`` (the helpers it imports) loaded here, for the report's
  fingerprint. The outputs themselves stay here: kernel-bench replays the
  trace on inputs of its own and checks those.

Nothing this process says is believed: a wrong trace can only fail its replay.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path


class BenchWorker:
    def __init__(self, requests: int, replies: int):
        import torch

        import learning.check.protocol as wire
        from learning import ops
        from learning.check.kernel_guards import AllocationTrap
        from learning.check.replay import TraceRecorder

        self.torch, self.wire, self.ops = torch, wire, ops
        self.trap, self.recorder = AllocationTrap, TraceRecorder
        self.requests, self.replies = requests, replies
        self.repo = Path(wire.__file__).resolve().parents[2]

    def serve(self) -> None:
        """Answer requests until the pipe closes (the checker's worker loop, shared)."""
        self.wire.serve(self.requests, self.replies, self._handle, self._error)

    def _handle(self, request: dict) -> dict:
        handler = {"import": self._import, "bench_kernel": self._kernel}.get(request.get("kind"))
        return handler(request) if handler else {"ok": False, "protocol": "unknown"}

    def _error(self, error: BaseException, request: dict) -> dict:
        try:
            return self.wire.describe_error(error, self._root(request), self.repo)
        except Exception:  # an exception too strange to describe: its type's name will do
            return {"type": type(error).__name__, "message": "", "bases": ["Exception"]}

    def _root(self, request: dict) -> Path:
        module = sys.modules.get(str(request.get("package")))
        where = getattr(module, "__file__", None)
        return Path(where).resolve().parent if where else self.repo

    def _import(self, request: dict) -> dict:
        importlib.import_module(request["module"])
        return {"ok": True}

    def _kernel(self, request: dict) -> dict:
        torch, ops = self.torch, self.ops
        spec = ops.get(request["op"])
        function = getattr(importlib.import_module(request["module"]), request["function"], None)
        if not callable(function):
            return {"ok": True, "missing": True}
        dtype = ops.dtype_from_name(request["dtype"])
        device = request["device"]
        inputs = spec.inputs(tuple(request["shape"]), dtype, int(request["seed"]), device)
        recorder = self.recorder(self._root(request))
        for name, value in inputs.items():
            if torch.is_tensor(value):
                recorder.add_input(name, value)
        with self.trap(), recorder:
            outputs = tuple(spec.call(function, inputs))
            if device == "cuda":
                torch.cuda.synchronize()
        return {
            "ok": True,
            "trace": recorder.trace(),
            "described": recorder.describe_outputs(outputs),
            "files": self._loaded_files(self._root(request)),
            "helpers": self._loaded_files(self.repo / "reference"),
        }

    def _loaded_files(self, root: Path) -> list[str]:
        """The files under ``root`` loaded in this process, relative to it: the package's, and
        the course's helpers the function used to plan and launch its kernels (``reference``'s
        row plans and launcher, which the exercises import)."""
        found = set()
        for module in list(sys.modules.values()):
            where = getattr(module, "__file__", None)
            if isinstance(where, str) and Path(where).resolve().is_relative_to(root):
                found.add(Path(where).resolve().relative_to(root).as_posix())
        return sorted(found)


def main(program: int, requests: int, replies: int) -> None:
    """Entry point of the bootstrap (see ``learning.bench.learner``)."""
    try:
        os.close(program)  # the program's text is read; the bootstrap may have closed it
    except OSError:
        pass
    os.dup2(2, 1)  # the learner's prints go to the log, never into the replies
    sys.stdout = sys.stderr
    import torch

    torch.set_num_threads(1)  # as the checker's worker does (pytorch#188792: see there)
    BenchWorker(requests, replies).serve()
    sys.stderr.flush()
    os._exit(0)  # a thread the learner's code left behind must not hold the process
