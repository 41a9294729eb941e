"""The process where a learner's function runs for kernel-bench, once per case, never timed.

kernel-bench (``learning.bench.learner``) starts it through the checker's process machinery
(:class:`learning.check.remote.Child`: a program read from a pipe, stdin closed, a session of
its own, a clean environment, a time limit per request). It is the checker's worker
(:class:`learning.check.worker.Worker`) with one more request:

* ``bench_kernel``: make the op's inputs of one case (shape, dtype, seed, device), call the
  learner's function on them once with every Triton launch recorded
  (:class:`~learning.check.replay.TraceRecorder`) and ``torch.empty``-style allocations
  poisoned; reply with the trace and where the outputs live (plain data). The outputs
  themselves stay here: kernel-bench replays the trace on inputs of its own and checks those.
  The reply also names the package's files loaded here (for the report's fingerprint).

Nothing this process says is believed: a wrong trace can only fail its replay.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from learning.check.worker import Worker, one_intra_op_thread


class BenchWorker(Worker):
    def _on_bench_kernel(self, request: dict) -> dict:
        torch, ops = self.torch, self.ops
        spec = ops.get(request["op"])
        function = getattr(self._module(request), request["function"], None)
        if not callable(function):
            return {"ok": True, "missing": True}
        dtype = ops.dtype_from_name(request["dtype"])
        device = request["device"]
        inputs = spec.inputs(tuple(request["shape"]), dtype, int(request["seed"]), device)
        recorder = self.recorder(self._package_root(request.get("package")))
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
            "files": self._package_files(request.get("package")),
        }

    def _package_files(self, package: str | None) -> list[str]:
        """The package's files loaded in this process, relative to its folder (for the
        report's fingerprint: a helper module the function used to plan its launches)."""
        root = self._package_root(package)
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
    one_intra_op_thread()
    BenchWorker(requests, replies, kernels=True).serve()
    sys.stderr.flush()
    os._exit(0)  # a thread the learner's code left behind must not hold the process
