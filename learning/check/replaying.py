"""Replays of recorded kernel launches, in a process of their own, for the kernel checks.

The kernel checker hands each recorded call to :class:`ReplayService`: one replay process per
exercise run, which imports only :mod:`learning.check.replay` and the kernels extracted from
the learner's files (never the learner's modules), and answers one replay at a time. The
replays run in a background thread, so that the worker and the replay process work side by
side; each has a time limit (a kernel that loops forever on some inputs is stopped, and the
next replay gets a fresh process), and their results are read as untrusted data like the
worker's (:mod:`learning.check.protocol`): the replayed kernels are the learner's code too.

:func:`main` is the replay process's side (``replay`` requests, answered with
:func:`learning.check.replay.replay`'s result).
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from learning.check import protocol
from learning.check.remote import (
    STARTUP_LIMIT_S,
    CallTimedOut,
    Child,
    ProcessDied,
    Session,
    TimeUp,
)

_PROGRAM = "from learning.check.replaying import main\n"


@dataclass
class Replayed:
    """One replay's result on the checker's side; ``error`` set when there is none."""

    outputs: tuple = ()
    unwritten: list[str] = field(default_factory=list)
    stray_stores: list[str] = field(default_factory=list)
    inputs_changed: list[str] = field(default_factory=list)
    stray_loads: list[str] = field(default_factory=list)
    traffic: dict | None = None  # checked by learning.check.traffic before it is shown
    owners: tuple = ()  # per output: who stored each element (asked for with owners=True)
    error: str | None = None  # why the trace could not be replayed (or did not finish)


class ReplayService:
    """The exercise run's replay process, fed from a queue (see the module docstring)."""

    def __init__(self, session: Session, bundle: dict, device: str, limit_s: float,
                 references: tuple[str, ...] = ()):  # fmt: skip
        self.session, self.bundle, self.device, self.limit_s = session, bundle, device, limit_s
        self.references = list(references)  # ops whose reference traffic may be asked for
        self.child = Child(_PROGRAM, "main({}, {}, {})", session.environment(), "replay process",
                           fork=True)  # fmt: skip
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="replay")
        self._loaded = False

    def submit(self, trace: dict, described: list, inputs: dict,
               limit_s: float | None = None, owners: bool = False) -> Future:  # fmt: skip
        """Replay ``trace`` on ``inputs`` (poison fill) within ``limit_s`` (the service's by
        default); the future's result is a :class:`Replayed`, or it raises
        :class:`~learning.check.remote.TimeUp`. ``owners``: say which program stored each
        output element (for a picture of a failure)."""
        request = {"kind": "replay", "trace": trace, "outputs": described, "owners": owners}
        return self._executor.submit(self._replay, request, inputs, limit_s or self.limit_s)

    def submit_reference(self, op: str, inputs: dict, limit_s: float | None = None) -> Future:
        """The bytes the course's reference kernels for ``op`` load and store on ``inputs``
        (one of the ``references`` given at the start): the future's result is the traffic
        (untrusted data, as any reply), or None when it could not be counted."""
        request = {"kind": "reference", "op": op}
        return self._executor.submit(self._reference, request, inputs, limit_s or self.limit_s)

    def start(self) -> str | None:
        """Start the replay process and load the bundle now, before the worker imports any
        learner code; the reason it could not, or None. (A later start, after a crash of the
        replay process, happens with the worker ended: see ``_replay``.)"""
        left = self.session.time_left()
        limit = STARTUP_LIMIT_S if left is None else max(1.0, min(STARTUP_LIMIT_S, left))
        try:
            self.child.start(limit)
            self._ask(self._bundle_request(), limit)
        except (CallTimedOut, ProcessDied, protocol.BadReply, _Refused) as error:
            self.child.kill()
            return f"the replay process could not start: {error}"
        self._loaded = True
        return None

    def _bundle_request(self) -> dict:
        # The references are imported with the bundle, before the worker runs learner code
        # (a later start, after a crash, happens with the worker ended: see _ask_loaded).
        return {"kind": "bundle", "bundle": self.bundle, "references": self.references}

    def _ask_loaded(self, request: dict, inputs: dict, limit_s: float) -> dict:
        """``request`` answered by a replay process that has the bundle loaded."""
        left = self.session.time_left()
        if left is not None and left <= 0:
            raise TimeUp(self.session.time_limit_s, self.child.log_tail())
        limit = limit_s if left is None else min(limit_s, left)
        request = {**request, "device": self.device,
                   "inputs": protocol.to_plain(inputs, copy=False)}  # fmt: skip
        try:
            if not self.child.running:
                self.child.start(STARTUP_LIMIT_S if left is None else min(STARTUP_LIMIT_S, left))
                self._loaded = False
            if not self._loaded:
                self._ask(self._bundle_request(), limit)
                self._loaded = True
            return self._ask(request, limit)
        except CallTimedOut:
            if left is not None and limit >= left:
                raise TimeUp(self.session.time_limit_s, self.child.log_tail()) from None
            raise

    def _reference(self, request: dict, inputs: dict, limit_s: float) -> dict | None:
        try:
            reply = self._ask_loaded(request, inputs, limit_s)
        except (CallTimedOut, ProcessDied, protocol.BadReply, _Refused):
            return None  # only a comparison in a message was at stake
        return reply.get("traffic")

    def _replay(self, request: dict, inputs: dict, limit_s: float) -> Replayed:
        import torch

        try:
            reply = self._ask_loaded(request, inputs, limit_s)
        except CallTimedOut as stopped:
            limit = stopped.limit_s
            return Replayed(error=f"replaying your kernels did not finish within {limit:g} s")
        except ProcessDied as died:
            return Replayed(error=f"the replay process ended: {died.reason}")
        except protocol.BadReply as bad:
            return Replayed(error=f"the replay process's reply was refused: {bad}")
        except _Refused as refused:
            return Replayed(error=str(refused))
        outputs, owners = reply.get("outputs"), reply.get("owners", [])
        lists = [reply.get(k) for k in ("unwritten", "stray_stores", "inputs_changed",
                                        "stray_loads")]  # fmt: skip
        if type(outputs) is not list or not all(type(o) is torch.Tensor for o in outputs):
            return Replayed(error="the replay process's reply holds no outputs")
        if not all(type(x) is list and all(type(s) is str for s in x) for x in lists):
            return Replayed(error="the replay process's reply is malformed")
        if type(owners) is not list or not all(o is None or type(o) is torch.Tensor
                                               for o in owners):  # fmt: skip
            owners = []
        return Replayed(tuple(outputs), *lists, traffic=reply.get("traffic"), owners=tuple(owners))

    def _ask(self, message: dict, limit: float) -> dict:
        reply = self.child.request(message, limit)
        if reply.get("ok") is not True:
            raise _Refused(str(reply.get("error", "the replay failed"))[: protocol.TEXT_SHOWN])
        return reply

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
        self.child.close()

    def __enter__(self) -> ReplayService:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


class _Refused(Exception):
    """The replay process could not replay the trace; the message says why."""


# --------------------------------------------------------------------------- the replay process


def main(program: int, requests: int, replies: int) -> None:
    """The replay process: answer ``bundle`` and ``replay`` requests until the pipe closes."""
    from learning.check import gpu_numerics
    from learning.check.replay import KernelSourceError, ReplayError
    from learning.check.worker import one_intra_op_thread

    os.dup2(2, 1)
    sys.stdout = sys.stderr
    one_intra_op_thread()
    gpu_numerics.install()  # round to 16 bits as a GPU does; programs out of order
    loaded: list[_LoadedKernels] = []

    def handle(request: dict) -> dict:
        if request["kind"] == "bundle":
            loaded[:] = [_LoadedKernels(request["bundle"], request.get("references", ()))]
            return {"ok": True}
        inputs = protocol.revive(request["inputs"])
        if request["kind"] == "reference":
            return {"ok": True, "traffic": loaded[0].reference(request["op"], inputs)}
        try:
            result = loaded[0].replay(request["trace"], request["outputs"], inputs,
                                      request["device"], bool(request.get("owners")))
        except (ReplayError, KernelSourceError, ValueError) as error:
            return {"ok": False, "error": str(error)}
        return {
            "ok": True, "outputs": [protocol.to_plain(o) for o in result.outputs],
            "unwritten": result.unwritten, "stray_stores": result.stray_stores,
            "inputs_changed": result.inputs_changed, "stray_loads": result.stray_loads,
            "traffic": result.traffic, "owners": [protocol.to_plain(o) for o in result.owners],
        }  # fmt: skip

    def describe(error: BaseException, request: dict) -> str:  # a kernel's own fault
        return f"a replayed kernel raised {type(error).__name__}: {protocol.safe_text(str, error)}"

    protocol.serve(requests, replies, handle, describe)
    os._exit(0)


class _LoadedKernels:
    """The bundle's kernels, loaded once for the many replays of an exercise run.

    :func:`learning.check.replay.replay` loads (and re-checks) the bundle on every call, which
    costs more than a small replay itself; :func:`~learning.check.replay.play.replay_with` is
    the same sequence of its steps with the loading done once. The course's reference
    functions for ``references`` (op names) are imported too, for their traffic."""

    def __init__(self, bundle: dict, references=()):
        from learning.check.replay import KernelBundle, play

        self.play = play
        self.kernels = play._Kernels(KernelBundle.from_dict(bundle))
        self._preload()
        self.references = _reference_functions(references)

    def _preload(self) -> None:
        """Import every kernel now, and under the interpreter rewrite it now: the service loads
        the bundle before the worker runs any learner code, so no later read of a file
        (a module imported on first use, the interpreter reading a kernel's source at its first
        launch) can meet a file the learner's process had time to change."""
        for name in self.kernels.bundle.kernels:
            function = self.kernels.function(_Named(name))
            rewrite = getattr(function, "rewrite", None)
            if callable(rewrite) and hasattr(function, "rewriter"):  # InterpretedFunction
                rewrite()

    def replay(self, trace: dict, outputs: list, inputs: dict, device: str, owners: bool):
        return self.play.replay_with(self.kernels, trace, outputs, inputs, device=device,
                                     owners=owners)  # fmt: skip

    def reference(self, op: str, inputs: dict) -> dict | None:
        """What the reference function of ``op`` loads and stores on ``inputs``, in all."""
        import torch

        from learning import ops, runtime
        from learning.check.replay.watch import MemoryWatch

        function = self.references.get(op)
        if function is None or not runtime.interpreting():
            return None
        spec = ops.get(op)
        inputs = {k: v.detach().requires_grad_(k in spec.wrt) if isinstance(v, torch.Tensor)
                  else v for k, v in inputs.items()}  # fmt: skip
        with MemoryWatch([]) as watch:
            spec.call(function, inputs)
        traffic = watch.traffic()
        return {"loaded_bytes": traffic["loaded_bytes"], "stored_bytes": traffic["stored_bytes"]}


def _reference_functions(names) -> dict:
    """The course's reference function of each op named, imported now and (under the
    interpreter) every reference kernel rewritten now, as the bundle's are (``_preload``)."""
    from learning import ops

    functions = {name: ops.OPS[name].kernel_function("reference")
                 for name in names if isinstance(name, str) and name in ops.OPS}  # fmt: skip
    modules = [m for n, m in list(sys.modules.items()) if n.split(".")[0] == "reference"]
    for module in modules:
        for value in list(vars(module).values()):
            rewrite = getattr(value, "rewrite", None)
            if callable(rewrite) and hasattr(value, "rewriter"):  # InterpretedFunction
                rewrite()
    return functions


@dataclass(frozen=True)
class _Named:
    """What ``_Kernels.function`` reads of a launch: its kernel's name and an index."""

    kernel: str
    index: int = 0


def fresh_outputs(trace: dict, described) -> dict:
    """The trace with every buffer an output lies in made a fresh (poisoned) allocation, unless
    it starts as zeros: what the checker and kernel-bench replay, both.

    An output buffer the recorder calls opaque is memory this call did not allocate (an output
    kept from an earlier call and written again) or that PyTorch wrote.
    A constant one holds a single value everywhere, and that value can be the answer itself (a
    softmax one column wide is 1.0 everywhere, whatever the input). Replayed as a fresh
    allocation, such a buffer holds the checker's marked NaN until the kernels store into it: a
    kernel that writes all of it is replayed as it ran; anything else shows as unwritten or
    wrong. Only an output that starts as zeros keeps its fill, so that a kernel may add into it
    (``torch.zeros`` and ``tl.atomic_add``): no input the checker draws has an answer of all
    zeros. Poison can only take an answer away, so this holds whatever the worker claims.

    An opaque output that only copies and casts wrote (``y32.to(x.dtype)``, no kernel was
    handed it) is left to them: the replay makes it again from their sources, or refuses it as
    a tensor PyTorch computed when a source is one (:mod:`learning.check.replay.plumbing`)."""
    buffers = trace.get("buffers") if isinstance(trace, dict) else None
    if not isinstance(buffers, list) or not isinstance(described, list):
        return trace
    outputs = {d.get("buffer") for d in described if isinstance(d, dict)}
    copied = _copied_only(trace)
    rewritten = [
        {**b, "kind": "alloc", "fill": None} if _answer_may_lie_in(b, outputs, copied) else b
        for b in buffers
    ]  # fmt: skip
    return {**trace, "buffers": rewritten}


def _answer_may_lie_in(buffer, outputs: set, copied: set) -> bool:
    if not isinstance(buffer, dict) or buffer.get("id") not in outputs:
        return False
    kind, fill = buffer.get("kind"), buffer.get("fill")
    zeros = type(fill) in (int, float, bool) and fill == 0
    return (kind == "opaque" and buffer.get("id") not in copied) or (kind == "const" and not zeros)


def _copied_only(trace: dict) -> set:
    """The buffers steps wrote into that no launch was handed (as the trace says: a claim
    either poisons a buffer or leaves it to the replay's rule for steps)."""
    written = set()
    for step in trace.get("steps") if isinstance(trace.get("steps"), list) else []:
        target = step.get("to") if isinstance(step, dict) else None
        if isinstance(target, dict):
            written.add(target.get("buffer"))
    launches = trace.get("launches")
    for launch in launches if isinstance(launches, list) else []:
        arguments = launch.get("args") if isinstance(launch, dict) else None
        for value in arguments.values() if isinstance(arguments, dict) else []:
            tensor = value.get("tensor") if isinstance(value, dict) else None
            if isinstance(tensor, dict):
                written.discard(tensor.get("buffer"))
    return written


def kernel_sources(package_root: Path, folder: str = "kernels") -> dict[str, str]:
    """The text of every module under ``<package_root>/<folder>``, keyed by its path relative
    to the package root (what :func:`learning.check.replay.extract.extract_sources` takes): the
    kernels' folder only, so that a mistake in another exercise's file cannot stop these."""
    from learning.check.replay import KernelSourceError

    root = Path(package_root)
    real_root = root.resolve()
    sources: dict[str, str] = {}
    for path in sorted((root / folder).rglob("*.py")):
        relative = path.relative_to(root)
        if any(part.startswith(".") or part == "__pycache__" for part in relative.parts):
            continue
        if not path.resolve().is_relative_to(real_root):
            raise KernelSourceError(f"{relative}: a link outside the package; only the "
                                    "package's own files are read")  # fmt: skip
        if all(p.removesuffix(".py").isidentifier() for p in relative.parts):
            try:
                sources[relative.as_posix()] = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                raise KernelSourceError(f"{relative}: cannot be read: {error}") from None
    return sources
