"""Check and replay processes forked from a server that has imported torch and Triton once.

On a two-core laptop, ``import torch, triton`` is about 1.7 s of CPU, and every kernel check
starts two processes (the worker and the replay process): most of a short check was spent
importing. :func:`spawn` starts the same process from a fork of one server per checker process
(and per start-up environment) that imported those libraries and nothing else: no course code,
no learner code, no seed. What the child then does is what ``python -c <bootstrap>`` would do
(:class:`learning.check.remote.Child`): a process group of its own, stdin closed, stdout and stderr
on the log pipe, the clean environment it was given, the working directory, ``sys.path`` as
``PYTHONPATH`` makes it, fresh random seeds, its own ``__main__``.

The trust boundary does not move. The server never runs learner code, so no child inherits
anything a learner did; it is marked not dumpable, so another process of the same user (a
learner's worker) can neither trace it nor write its memory; it holds no verdict and no seed.
A learner's worker can still signal it (it is the worker's parent): a server that is stopped or
killed only costs that learner's run, as killing the checker itself would. A fork request
that is not answered within :data:`FORK_LIMIT_S` ends that server, and the next request starts
a new one; when the server cannot start, the caller starts a fresh interpreter instead.
:func:`close_all` ends every server (the grader does between learners, so that no two
learners' runs share one).

Only Linux forks this way, and only under Triton's interpreter (see :func:`enabled`); elsewhere,
and with ``LEARNING_FRESH_PROCESSES=1``, :func:`spawn` raises :class:`Unavailable` and every
process is a fresh interpreter.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading

FORK_LIMIT_S = 30.0  # a fork answered later than this: the server is stopped or broken
READY_LIMIT_S = 120.0  # importing torch and Triton on a loaded machine
FRESH_VARIABLE = "LEARNING_FRESH_PROCESSES"
# What a child sets for itself after the fork and the server never reads: its import path, and
# the course's own settings (the order a graded launch runs its programs in differs with every
# run's seed). Left out of the server's environment and of what picks a server, so that runs
# differing only in these share one server instead of starting one each.
_CHILD_ONLY_PREFIXES = ("PYTHONPATH", "LEARNING_")
# Servers kept at once: each holds torch and Triton (about 300 MB). Starting one more ends the
# least recently used idle one, so that no sequence of environments can fill the memory.
MAX_SERVERS = 2
PRELOAD = ("torch", "triton")
_MESSAGE_BYTES = 1 << 20

# The server's program, run by ``python -c`` as the checker's processes are (its text read from
# a pipe). ``_serve`` returns only in a forked child, which then becomes the process asked for.
_SERVER_PROGRAM = r'''
import json, os, select, signal, socket, sys


def _serve(control_fd, preload):
    for name in preload:
        __import__(name)
    try:  # not dumpable: no process of this user can trace it or write its memory
        import ctypes
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
    except Exception:
        pass
    control = socket.socket(fileno=control_fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    base_path = list(sys.path)
    sys.stdout.flush()
    sys.stderr.flush()

    def say(message):
        try:
            control.send(json.dumps(message).encode())
        except OSError:
            os._exit(0)  # the checker is gone

    say({"ready": os.getpid()})
    while True:
        ready, _, _ = select.select([control, wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            say({"exit": pid, "code": os.waitstatus_to_exitcode(status)})
        if control not in ready:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(control, %(size)d, 8)
        except OSError:
            data, fds = b"", []
        if not data:
            os._exit(0)
        request = json.loads(data)
        pid = os.fork()
        if pid == 0:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            os.close(wake_r)
            os.close(wake_w)
            control.close()
            return request, fds, base_path
        for fd in fds:
            os.close(fd)
        say({"forked": pid})


def _become(request, fds, base_path):
    """Turn this forked child into ``python -c <bootstrap>``; the bootstrap's text."""
    import ctypes, importlib, random, tempfile
    program, requests, replies, log = fds
    os.setsid()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    extra = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = ["", *extra, *base_path[1:]]
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()
    sys.dont_write_bytecode = True
    tempfile.tempdir = None  # a fresh process reads TMPDIR when it first needs a folder
    random.seed()  # a fresh process seeds these from the system
    if "numpy.random" in sys.modules:
        sys.modules["numpy.random"].seed()
    try:
        ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # dumpable again, as any process is
    except Exception:
        pass
    entry = request["entry"].format(program, requests, replies)
    return (f"import os;exec(compile(os.fdopen({program},'rb').read(),'<program>','exec'));"
            f"{entry}")


def _fresh_main():
    """``__main__`` as a fresh ``python -c`` has it: the server's own names gone."""
    main = sys.modules["__main__"].__dict__
    for name in [n for n in main if not (n.startswith("__") and n.endswith("__"))]:
        del main[name]
    main["__annotations__"] = {}
    return main


exec(compile(_become(*_serve(%(control)d, %(preload)r)), "<string>", "exec"), _fresh_main())
'''


class Unavailable(Exception):
    """No server can fork this process: the caller starts a fresh interpreter."""


def _server_environment(env: dict[str, str]) -> dict[str, str]:
    """The environment a server starts under: ``env`` less what each child sets for itself."""
    return {k: v for k, v in env.items() if not k.startswith(_CHILD_ONLY_PREFIXES)}


def _startup_key(env: dict[str, str]) -> frozenset:
    """What a server is started under (:func:`_server_environment`); a child whose other
    settings differ gets a server of its own."""
    return frozenset(_server_environment(env).items())


class ForkedProcess:
    """The part of :class:`subprocess.Popen` the checker uses, for a child of a server."""

    def __init__(self, server: _Server, pid: int, stdout):
        self.server, self.pid, self.stdout = server, pid, stdout
        self.args = ["<forked>"]

    @property
    def returncode(self) -> int | None:
        return self.server.exit_code(self.pid)

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        code = self.server.wait_exit(self.pid, timeout)
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout)
        return code

    def kill(self) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class _Server:
    def __init__(self, env: dict[str, str], cwd: str):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        program_r, program_w = os.pipe()
        control_fd = theirs.fileno()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", f"import os;exec(compile(os.fdopen({program_r},'rb')"
                 f".read(),'<program>','exec'))"],
                cwd=cwd, env=_server_environment(env),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                pass_fds=(program_r, theirs.fileno()), start_new_session=True,
            )  # fmt: skip
        except BaseException:
            ours.close()
            os.close(program_w)
            raise
        finally:
            os.close(program_r)
            theirs.close()
        program = _SERVER_PROGRAM % {"size": _MESSAGE_BYTES, "control": control_fd,
                                     "preload": PRELOAD}  # fmt: skip
        with os.fdopen(program_w, "wb") as pipe:
            try:
                pipe.write(program.encode("utf-8"))
            except BrokenPipeError:
                pass
        self.control = ours
        self._lock = threading.Lock()  # one fork request at a time
        self._forked: queue.Queue = queue.Queue()
        self._exits: dict[int, int] = {}
        self._children: set[int] = set()
        self._changed = threading.Condition()
        self.alive = True
        ours.settimeout(READY_LIMIT_S)
        try:
            ready = json.loads(ours.recv(_MESSAGE_BYTES) or b"null")
        except (OSError, ValueError):
            ready = None
        ours.settimeout(None)
        if not isinstance(ready, dict) or "ready" not in ready:
            self.close()
            raise Unavailable("the process server did not start")
        self._reader = threading.Thread(target=self._read, daemon=True, name="forkserver")
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    def spawn(self, entry: str, env: dict[str, str], cwd: str, fds: list[int], log_r: int):
        """Fork a child that runs the bootstrap on ``fds`` (program, requests, replies, log);
        the caller keeps its own ends and closes ``fds`` afterwards."""
        message = json.dumps({"entry": entry, "env": env, "cwd": cwd}).encode()
        with self._lock:
            if not self.alive:
                raise Unavailable("the process server has ended")
            try:
                socket.send_fds(self.control, [message], fds)
                pid = self._forked.get(timeout=FORK_LIMIT_S)
            except (OSError, queue.Empty):
                self.close()
                raise Unavailable("the process server did not fork in time") from None
            if pid is None:
                raise Unavailable("the process server has ended")
        return ForkedProcess(self, pid, os.fdopen(log_r, "rb"))

    def _read(self) -> None:
        while True:
            try:
                data = self.control.recv(_MESSAGE_BYTES)
                message = json.loads(data) if data else None
            except (OSError, ValueError):
                message = None
            if not isinstance(message, dict):
                break
            if "forked" in message:
                with self._changed:
                    self._children.add(message["forked"])
                self._forked.put(message["forked"])
            elif "exit" in message:
                with self._changed:
                    self._children.discard(message["exit"])
                    self._exits[message["exit"]] = message["code"]
                    self._changed.notify_all()
        self._ended()

    def _ended(self) -> None:
        """The server is gone: its children can no longer be waited for, so they are ended
        (their process group killed) and counted as killed."""
        with self._changed:
            self.alive = False
            for pid in self._children:
                for kill in (os.killpg, os.kill):
                    try:
                        kill(pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
                self._exits.setdefault(pid, -signal.SIGKILL)
            self._children.clear()
            self._changed.notify_all()
        self._forked.put(None)

    def idle(self) -> bool:
        """No child of this server is running (closing it would end none)."""
        with self._changed:
            return not self._children

    def exit_code(self, pid: int) -> int | None:
        with self._changed:
            return self._exits.get(pid)

    def wait_exit(self, pid: int, timeout: float | None) -> int | None:
        with self._changed:
            self._changed.wait_for(lambda: pid in self._exits, timeout)
            return self._exits.get(pid)

    def close(self) -> None:
        self.alive = False
        try:
            self.control.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.process.kill()
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        reader = getattr(self, "_reader", None)
        if reader is not None and reader is not threading.current_thread():
            reader.join(timeout=5)
        self.control.close()


_servers: dict[frozenset, _Server] = {}
_lock = threading.Lock()
_at_exit: list = []  # close_all, once registered


def enabled(env: dict[str, str] | None = None) -> bool:
    """Forking is on: Linux, Triton's interpreter in ``env`` (this process's by default), and
    ``LEARNING_FRESH_PROCESSES`` not 1 in this process. With CUDA, importing torch and Triton
    opens pipes, an eventfd and a socket, which every forked child would share with its
    siblings; there each starts fresh."""
    env = os.environ if env is None else env
    return (sys.platform.startswith("linux") and hasattr(os, "fork")
            and os.environ.get(FRESH_VARIABLE) != "1"
            and env.get("TRITON_INTERPRET") == "1")  # fmt: skip


def spawn(entry: str, env: dict[str, str], cwd: str, fds: list[int], log_r: int):
    """A :class:`ForkedProcess` running the bootstrap with ``entry``, or :class:`Unavailable`."""
    if not enabled(env):
        raise Unavailable("forking is off")
    key = _startup_key(env)
    with _lock:
        server = _servers.pop(key, None)  # put back last: the most recently used
        if server is None or not server.alive or server.process.poll() is not None:
            if server is not None:
                server.close()
            if not _at_exit:
                _at_exit.append(atexit.register(close_all))
            idle = [k for k, s in _servers.items() if s.idle()]  # least recently used first
            for old in idle[: max(0, len(_servers) + 1 - MAX_SERVERS)]:
                _servers.pop(old).close()
            server = _Server(env, cwd)
        _servers[key] = server
    return server.spawn(entry, env, cwd, fds, log_r)


def pids() -> set[int]:
    """The running servers' process ids: the checker's own children, never strays."""
    with _lock:
        return {server.pid for server in _servers.values()
                if server.alive and server.process.poll() is None}  # fmt: skip


def close_all() -> None:
    """End every server (the next :func:`spawn` starts a new one)."""
    with _lock:
        servers = list(_servers.values())
        _servers.clear()
    for server in servers:
        server.close()
