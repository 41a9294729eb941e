"""The checker's side of the worker: start it, ask it, time it, and read what it says as data.

:class:`Child` is one process spoken to over two pipes of its own (requests in, replies out;
its stdout and stderr are a log whose tail failure messages quote). It is started as
``python -c <bootstrap>`` with stdin closed, in a session of its own (so a kill ends its
children too), with a clean environment: ``PATH``, ``HOME``, locale, temporary directories,
the CUDA and Triton settings and a ``PYTHONPATH`` to the course and the learner's package,
never the checker's seed (``LEARNING_CHECK_SEED``). Every request has a time limit enforced
here: past it the process group is killed, the request fails with the limit in its message,
and the next request starts a fresh process.

:class:`Session` is one exercise run: the run seed (which only this side knows), the worker
for the learner's code, the deadline for the whole exercise, and the machine's pace measured
once (:mod:`learning.check.pace`), which every request's limit is multiplied by: the limits
the checks name are seconds on the course's reference machine. :class:`RemoteModule` is the
learner's module as the checks call it: ``module.call("speedup", 10.0, 5.0)`` sends the
request and returns an :class:`Outcome` built from the decoded reply.
"""

from __future__ import annotations

import hashlib
import math
import os
import signal
import subprocess
import sys
import sysconfig
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from learning.check import forkserver, pace, protocol
from learning.check.gpu_numerics import ORDER_SEED_VARIABLE
from learning.check.seeds import run_seed

REPO = Path(__file__).resolve().parents[2]
WORKER_PROGRAM = Path(__file__).with_name("worker.py")
STARTUP_LIMIT_S = 120.0  # importing torch (and triton) in a fresh process, on a loaded machine
LOG_TAIL_BYTES = 16_384
_KEPT_VARIABLES = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "TMPDIR", "TEMP", "TMP",
                   "SYSTEMROOT", "LD_LIBRARY_PATH")  # fmt: skip
_KEPT_PREFIXES = ("LC_", "CUDA_", "TRITON_", "NVIDIA_", "HIP_", "ROCR_")


_WHERE_WAIT_S = 0.5  # how long a stopped worker has to say what it was running


class CallTimedOut(Exception):
    """A request did not finish within its limit; the process was killed. ``where``: what the
    process said it was running when asked just before (a hint: it is the learner's process)."""

    def __init__(self, limit_s: float, where: str | None = None):
        super().__init__(f"did not return within {limit_s:g} s")
        self.limit_s = limit_s
        self.where = where


class ProcessDied(Exception):
    """The process ended (a crash, ``os._exit``, a kill) before it replied."""

    def __init__(self, reason: str, log_tail: str):
        super().__init__(reason)
        self.reason = reason
        self.log_tail = log_tail


class TimeUp(BaseException):
    """The exercise's whole time limit is spent. A BaseException, so that no check's
    ``except Exception`` takes it for its own failure: the runner reports it."""

    def __init__(self, limit_s: float, log_tail: str):
        super().__init__(f"did not finish within {limit_s:g} s")
        self.limit_s = limit_s
        self.log_tail = log_tail


def clean_environment(extra_path: Sequence[Path | str] = ()) -> dict[str, str]:
    """The child's environment: see the module docstring."""
    env = {
        key: value for key, value in os.environ.items()
        if key in _KEPT_VARIABLES or key.startswith(_KEPT_PREFIXES)
    }  # fmt: skip
    env["PYTHONPATH"] = os.pathsep.join(python_path(extra_path))
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def python_path(extra_path: Sequence[Path | str]) -> list[str]:
    """The course, ``extra_path``, then what this process has on ``sys.path`` outside the
    Python installation (a test's temporary package, a caller's own folders)."""
    installed = {Path(p).resolve() for p in sysconfig.get_paths().values() if p}
    installed |= {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    entries = [str(REPO), *map(str, extra_path)]
    for entry in sys.path:
        path = Path(entry or ".").resolve()
        if entry and path.is_dir() and not any(path.is_relative_to(i) for i in installed):
            entries.append(str(path))
    return list(dict.fromkeys(entries))


# --------------------------------------------------------------------------- one process


class Child:
    """One process running a program read from a pipe, answering framed requests.

    ``program`` is the text the bootstrap runs; ``entry`` the call it then makes, with the
    three file descriptors (program, requests, replies) filled in, e.g. ``main({}, {}, {},
    True)``.
    """

    def __init__(self, program: str, entry: str, env: dict[str, str], name: str, *,
                 fork: bool = False):  # fmt: skip
        self.program, self.entry, self.env, self.name = program, entry, env, name
        self.fork = fork  # from the process server (learning.check.forkserver) when it can
        self.process: subprocess.Popen | None = None
        self._log: deque[bytes] = deque()
        self._reader: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self, limit_s: float = STARTUP_LIMIT_S) -> None:
        program_r, program_w = os.pipe()
        requests_r, requests_w = os.pipe()
        replies_r, replies_w = os.pipe()
        entry = self.entry.format(program_r, requests_r, replies_w)
        bootstrap = f"import os;exec(compile(os.fdopen({program_r},'rb').read(),'<program>'," \
                    f"'exec'));{entry}"  # fmt: skip
        self._log = deque()
        self.process = None
        try:
            if self.fork:
                self.process = _forked(self.entry, self.env, program_r, requests_r, replies_w)
            if self.process is None:
                self.process = subprocess.Popen(
                    [sys.executable, "-c", bootstrap], cwd=REPO, env=self.env,
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    pass_fds=(program_r, requests_r, replies_w), start_new_session=True,
                )  # fmt: skip
        finally:
            for fd in (program_r, requests_r, replies_w):
                os.close(fd)
        self._requests, self._replies = requests_w, replies_r
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()
        with os.fdopen(program_w, "wb") as pipe:
            try:
                pipe.write(self.program.encode("utf-8"))
            except BrokenPipeError:
                pass
        ready = self._receive(time.monotonic() + limit_s, limit_s)
        if ready.get("ready") is not True:
            self.kill()
            raise ProcessDied(f"the {self.name} did not start as expected", self.log_tail())

    def request(self, message: dict, limit_s: float) -> dict:
        """Send ``message``; the decoded reply (a dict), or CallTimedOut / ProcessDied /
        protocol.BadReply."""
        if not self.running:
            self.start()
        deadline = time.monotonic() + limit_s
        try:
            protocol.write_frame(self._requests, protocol.dumps(message), deadline)
        except protocol.FrameTimeout:
            self.kill()
            raise CallTimedOut(limit_s) from None
        except protocol.ChannelClosed:
            raise self._died() from None
        return self._receive(deadline, limit_s)

    def _receive(self, deadline: float, limit_s: float) -> dict:
        try:
            payload = protocol.read_frame(self._replies, deadline, protocol.MAX_REPLY_BYTES)
        except protocol.FrameTimeout:
            where = self._where()
            self.kill()
            raise CallTimedOut(limit_s, where) from None
        except (protocol.ChannelClosed, OSError):
            raise self._died() from None
        except protocol.BadReply:
            self.kill()
            raise
        try:
            reply = protocol.loads(payload)
        except protocol.BadReply:
            self.kill()  # a process that speaks out of turn is not asked again
            raise
        if type(reply) is not dict:
            self.kill()
            raise protocol.BadReply("a reply that is not a dict")
        return reply

    def _died(self) -> ProcessDied:
        process = self.process
        try:
            code = process.wait(timeout=5) if process else None
        except subprocess.TimeoutExpired:
            self.kill()
            code = None
        self._close()
        if code is not None and code < 0:
            reason = f"it was killed by {_signal_name(-code)}"
            if -code == signal.SIGSEGV:
                reason += (
                    " (a segmentation fault: the code it ran read or wrote memory it does not "
                    "own; look for ctypes, or a kernel pointer offset past the end of a tensor)"
                )
        elif code is not None:
            reason = (
                f"it ended (exit status {code}) without replying; does the code call "
                "sys.exit() or os._exit(), or close file descriptors it did not open?"
            )
        else:
            reason = "it closed its reply pipe without replying"
        return ProcessDied(reason, self.log_tail())

    def _where(self) -> str | None:
        """Ask the process what it is running (``protocol.WHERE_SIGNAL``) and wait a moment for
        its line in the log; None without an answer. Only the worker answers; any other process the
        signal reaches is killed next anyway."""
        process = self.process
        if process is None or process.poll() is not None:
            return None
        try:
            os.kill(process.pid, protocol.WHERE_SIGNAL)
        except (ProcessLookupError, PermissionError):
            return None
        waited = time.monotonic() + _WHERE_WAIT_S
        while time.monotonic() < waited:
            lines = self.log_tail().splitlines()
            said = [line for line in lines if line.startswith(protocol.WHERE_PREFIX)]
            if said:
                return said[-1][len(protocol.WHERE_PREFIX):][:300]
            time.sleep(0.02)
        return None

    def kill(self) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                process.kill()
        if process is not None:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self._close()

    def _close(self) -> None:
        for name in ("_requests", "_replies"):
            fd = getattr(self, name, None)
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
                setattr(self, name, None)
        if self._reader is not None:
            self._reader.join(timeout=2)
        self.process = None

    def close(self) -> None:
        self.kill()

    def _drain(self) -> None:
        stream, kept = self.process.stdout, 0
        for chunk in iter(lambda: stream.read1(65536), b""):
            self._log.append(chunk)
            kept += len(chunk)
            while kept - len(self._log[0]) >= LOG_TAIL_BYTES:
                kept -= len(self._log.popleft())
        stream.close()

    def log_tail(self) -> str:
        text = b"".join(self._log).decode("utf-8", "replace")[-LOG_TAIL_BYTES:]
        return text


def _forked(entry: str, env: dict[str, str], program_r: int, requests_r: int, replies_w: int):
    """The process forked from :mod:`learning.check.forkserver`, its log on a pipe of its own;
    None where no server can fork it (the caller starts a fresh interpreter)."""
    log_r, log_w = os.pipe()
    try:
        return forkserver.spawn(entry, env, str(REPO), [program_r, requests_r, replies_w, log_w],
                                log_r)  # fmt: skip
    except BaseException as error:
        os.close(log_r)
        if isinstance(error, forkserver.Unavailable):
            return None
        raise
    finally:
        os.close(log_w)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def log_lines(log_tail: str, count: int = 15) -> str:
    """The last lines a process wrote, indented, for a failure message ('' if none)."""
    lines = [line for line in log_tail.splitlines() if line.strip()][-count:]
    if not lines:
        return ""
    return "\nLast lines it wrote:\n" + "\n".join(f"  {line}" for line in lines)


# --------------------------------------------------------------------------- one exercise run


def derive_seed(seed: int, *labels: object) -> int:
    """A seed of its own for one input, from the run seed and labels naming the input."""
    text = "/".join(map(str, (seed, *labels))).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big") >> 2


class Session:
    """One exercise run on the checker's side: its seed, its worker and its deadline.

    ``seed`` is the caller's (the grader passes its own), else ``LEARNING_CHECK_SEED``, else a
    fresh one. ``time_limit_s`` bounds the whole run, in seconds of this machine (the caller
    scales it): a request that would outlast it raises :class:`TimeUp`. ``slowdown`` is what
    each request's limit (and the worker's start-up limit) is multiplied by: by default the
    machine's pace, measured now (:func:`learning.check.pace.slowdown`). ``kernels`` makes
    the worker ready to record Triton launches. ``copies_allowed`` lets kernels copied from the
    reference earn points (the course's own tests, which grade the reference's kernels under
    another package's name).
    """

    def __init__(self, exercise: str, impl: str = "exercises", *,
                 extra_path: Sequence[Path | str] = (), seed: int | None = None,
                 time_limit_s: float | None = None, kernels: bool = False,
                 copies_allowed: bool = False, slowdown: float | None = None):  # fmt: skip
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValueError(f"seed must be a whole number >= 0, got {seed!r}")
        self.exercise, self.impl = exercise, impl
        self.extra_path = tuple(extra_path)
        self.seed = seed if seed is not None else run_seed(2**31)
        self.slowdown = pace.slowdown() if slowdown is None else max(1.0, slowdown)
        self.time_limit_s = time_limit_s
        self._deadline = None if time_limit_s is None else time.monotonic() + time_limit_s
        self.kernels = kernels
        self.copies_allowed = copies_allowed  # see check_exercise's reference_copies
        self.worker = Child(
            WORKER_PROGRAM.read_text(encoding="utf-8"),
            "main({}, {}, {}, " + ("True" if kernels else "False") + ")",
            self.environment(self.extra_path), "check process", fork=True,
        )  # fmt: skip
        self.starts = 0  # worker processes started: more than one after a time-out or crash

    def time_left(self) -> float | None:
        return None if self._deadline is None else self._deadline - time.monotonic()

    def environment(self, extra_path: Sequence[Path | str] = ()) -> dict[str, str]:
        """A child's clean environment, with the order the run's launches run their programs in
        (:mod:`learning.check.gpu_numerics`): drawn from the run seed, so that the worker and
        the replays run a grid's programs in the same order, and a replayed seed replays it."""
        env = clean_environment(extra_path)
        env[ORDER_SEED_VARIABLE] = str(derive_seed(self.seed, "program order"))
        return env

    def scaled(self, limit_s: float) -> float:
        """A limit in seconds of the reference machine, in seconds of this one now (rounded up
        to a tenth, so that a message quotes it plainly)."""
        return math.ceil(limit_s * self.slowdown * 10) / 10

    def ask(self, message: dict, limit_s: float) -> dict:
        """The worker's reply to ``message``, within ``limit_s`` (seconds of the reference
        machine, :meth:`scaled` here) and the exercise's deadline: :class:`CallTimedOut`,
        :class:`ProcessDied` (a reply that is not plain data too) or :class:`TimeUp`
        otherwise."""
        limit_s = self.scaled(limit_s)
        if not self.worker.running:
            self._start()
        left = self.time_left()
        if left is not None and left <= 0:
            raise TimeUp(self.time_limit_s, self.worker.log_tail())
        bounded = limit_s if left is None else min(limit_s, left)
        try:
            return self.worker.request(message, bounded)
        except CallTimedOut:
            if bounded < limit_s:
                raise TimeUp(self.time_limit_s, self.worker.log_tail()) from None
            raise
        except protocol.BadReply as bad:  # the worker was stopped: as good as a crash
            reason = f"its reply was refused ({bad}); a reply is plain data, nothing else"
            raise ProcessDied(reason, self.worker.log_tail()) from None

    def _start(self) -> None:
        left = self.time_left()
        if left is not None and left <= 0:
            raise TimeUp(self.time_limit_s, self.worker.log_tail())
        startup = self.scaled(STARTUP_LIMIT_S)
        limit = startup if left is None else min(startup, left)
        self.starts += 1
        try:
            self.worker.start(limit)
        except CallTimedOut:
            if limit < startup:
                raise TimeUp(self.time_limit_s, self.worker.log_tail()) from None
            message = f"it did not start within {limit:g} s"
            raise ProcessDied(message, self.worker.log_tail()) from None

    def close(self) -> None:
        self.worker.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


@dataclass(frozen=True)
class Outcome:
    """What one remote call did: returned ``value``, raised ``error``, or ran out of time.

    ``args``/``kwargs``: the arguments as the call left them (a function may sort a list it
    was given); ``report``: what the worker saw while it ran, when asked (a hint only)."""

    value: Any = None
    error: BaseException | None = None
    timed_out: bool = False
    args: tuple = ()
    kwargs: dict | None = None
    report: Any = None

    @property
    def returned(self) -> bool:
        return self.error is None and not self.timed_out


class RemoteModule:
    """A module of the learner's package, called through the session's worker."""

    def __init__(self, session: Session, name: str):
        self.session, self.__name__ = session, name
        self._attributes: dict[str, tuple[bool, bool, Any]] = {}

    def load(self, limit_s: float) -> Outcome:
        """Import the module: its shown file path, or the import's error, or a time-out."""
        try:
            reply = self.session.ask({"kind": "import", "module": self.__name__}, limit_s)
        except CallTimedOut:
            return Outcome(timed_out=True)
        if reply.get("ok") is True:
            return Outcome(value=str(reply.get("file")))
        return Outcome(error=protocol.revive_error(reply.get("error")))

    def attribute(self, name: str, limit_s: float) -> tuple[bool, bool, Any]:
        """``(exists, callable, value)``; the value only for what is not callable."""
        if name not in self._attributes:
            message = {"kind": "attribute", "module": self.__name__, "name": name}
            reply = self.session.ask(message, limit_s)
            if reply.get("ok") is not True:
                raise protocol.revive_error(reply.get("error"))
            value = protocol.revive(reply.get("value"))
            self._attributes[name] = (reply.get("found") is True, reply.get("callable") is True,
                                      value)  # fmt: skip
        return self._attributes[name]

    def call(self, function: str, args: Sequence, kwargs: dict, *, limit_s: float,
             report: str | None = None) -> Outcome:  # fmt: skip
        """``function(*args, **kwargs)`` in the worker. A list or dict argument is updated in
        place to what the call left it as, so that a check sees a caller's list the function
        sorted; raises ProcessDied when the worker dies in the call."""
        message = {
            "kind": "call", "module": self.__name__, "function": function,
            "package": self.session.impl, "report": report,
            "args": protocol.to_plain(list(args), copy=False),
            "kwargs": protocol.to_plain(dict(kwargs), copy=False),
        }  # fmt: skip
        try:
            reply = self.session.ask(message, limit_s)
        except CallTimedOut:
            return Outcome(timed_out=True)
        if reply.get("ok") is not True:
            return Outcome(error=protocol.revive_error(reply.get("error")))
        after = protocol.revive(reply.get("args"))
        after_kwargs = protocol.revive(reply.get("kwargs"))
        for given, left in [*zip(args, after or (), strict=False),
                            *((kwargs[k], v) for k, v in (after_kwargs or {}).items()
                              if k in kwargs)]:  # fmt: skip
            _update_in_place(given, left)
        return Outcome(value=protocol.revive(reply.get("value")), args=tuple(after or ()),
                       kwargs=after_kwargs, report=reply.get("report"))  # fmt: skip


def _update_in_place(given: Any, left: Any) -> None:
    if type(given) is list and type(left) is list:
        given[:] = left
    elif type(given) is dict and type(left) is dict:
        given.clear()
        given.update(left)
