"""``subprocess.run([sys.executable, ...])`` for the tests, from a warm interpreter.

Most scripts under test import torch, and on a small CPU that import is nearly all of a short
run: about 1.5 s of each ``python scripts/x.py --bad-argument``. :func:`run` takes the same
arguments as :func:`subprocess.run` and returns the same :class:`subprocess.CompletedProcess`,
but each run is a child forked from one server process that imported torch once (and nothing
else of this project's). The child is still a process of its own: its own environment, working
directory, ``sys.argv``, ``sys.path``, ``__main__``, standard streams and exit status, as
``python script.py``, ``python -c code`` or ``python -m module`` would have them; whatever it
changes or imports is gone when it exits, and the child it may start itself is an ordinary
process. Anything the server printed while importing torch is put in front of each run's
output, as a fresh interpreter would have printed it.

Where a warm run could differ from a fresh one, :func:`run` starts a fresh one instead: a
command that is not this interpreter running a script, ``-c`` or ``-m``; other keywords than
``capture_output``/``text``/``timeout``/``cwd``/``env``/``check``; an ``env`` whose settings read
while Python starts or torch is imported (``PYTHON*``, ``TORCH*``, thread libraries, locale...)
differ from this process's; or no ``fork`` (only Linux forks). When this process's own settings
change, the next run starts a new server under them. ``TESTS_FRESH_PYTHON=1`` makes every run a
fresh one.
"""

from __future__ import annotations

import atexit
import locale
import os
import pickle
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time

# Variables read while Python starts or torch is imported (a superset): the server imports torch
# under this process's values, and a run that asks for other values is not forked.
_STARTUP_PREFIXES = ("PYTHON", "PYTORCH", "TORCH", "COMPILE_", "FX_", "KINETO", "NPY_", "NUMPY",
                     "OMP_", "MKL_", "OPENBLAS", "GOTO", "KMP_", "CUDA", "NVIDIA", "LD_",
                     "MALLOC", "GLIBC", "LC_", "LANG")  # fmt: skip
_FORK = sys.platform.startswith("linux") and hasattr(os, "fork")


# ... less those read only when CUDA is first initialized, which the server never does
_READ_LATER = {"CUDA_VISIBLE_DEVICES"}


def _startup_settings(env) -> dict:
    return {key: value for key, value in env.items()
            if key.startswith(_STARTUP_PREFIXES) and key not in _READ_LATER}  # fmt: skip


# --------------------------------------------------------------------------- the server


def _read_exact(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            return data
        data += chunk
    return data


def serve(request_fd: int, reply_fd: int) -> None:
    """Import torch, then fork one child for each request read from ``request_fd``."""
    import torch  # noqa: F401  (the import every child is spared)

    base_path = list(sys.path)  # [''] (``-c``) + PYTHONPATH + the standard and site folders
    sys.stdout.flush()
    sys.stderr.flush()
    os.write(reply_fd, struct.pack("<q", 0))  # ready
    while True:
        header = _read_exact(request_fd, 8)
        if len(header) < 8:
            return
        (size,) = struct.unpack("<q", header)
        request = pickle.loads(_read_exact(request_fd, size))
        pid = os.fork()
        if pid == 0:
            code = 70
            try:
                os.close(request_fd)
                os.close(reply_fd)
                code = _child(request, base_path)
            finally:
                os._exit(code)
        os.write(reply_fd, struct.pack("<qq", pid, 0))
        _, status = os.waitpid(pid, 0)
        os.write(reply_fd, struct.pack("<qq", pid, os.waitstatus_to_exitcode(status)))


def _child(request: dict, base_path: list[str]) -> int:
    """Become ``python <command>`` (in this forked child) and return its exit status."""
    import builtins
    import importlib
    import runpy
    import types

    written = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], written),
                            (2, request["stderr"], written)):  # fmt: skip
        opened = os.open(path, flags, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    command = request["command"]
    sys.orig_argv = list(command)
    main = types.ModuleType("__main__")
    main.__dict__.update(__builtins__=builtins, __annotations__={})
    sys.modules["__main__"] = main
    if command[1] == "-c":
        sys.argv = ["-c", *command[3:]]
        sys.path[:] = ["", *base_path[1:]]
    elif command[1] == "-m":
        sys.argv = ["-m", *command[3:]]  # runpy puts the module's file in argv[0]
        sys.path[:] = [os.getcwd(), *base_path[1:]]
    else:
        sys.argv = list(command[1:])
        sys.path[:] = [os.path.dirname(os.path.realpath(command[1])), *base_path[1:]]
    importlib.invalidate_caches()
    tempfile.tempdir = None  # a fresh process reads TMPDIR when it first needs a folder
    if "numpy.random" in sys.modules:  # a fresh process seeds it from the OS
        sys.modules["numpy.random"].seed()
    try:
        if command[1] == "-c":
            main.__loader__ = importlib.machinery.BuiltinImporter
            exec(compile(command[2], "<string>", "exec"), main.__dict__)
        elif command[1] == "-m":
            runpy._run_module_as_main(command[2], alter_argv=True)
        else:
            path = command[1]
            main.__file__, main.__cached__ = path, None
            main.__loader__ = importlib.machinery.SourceFileLoader("__main__", path)
            with open(path, "rb") as source:
                code = compile(source.read(), path, "exec")
            exec(code, main.__dict__)
        status = 0
    except SystemExit as exit:
        status = _exit_status(exit.code)
    except BaseException as error:  # what the interpreter prints for an uncaught exception
        traceback = error.__traceback__
        while traceback is not None and traceback.tb_frame.f_code.co_filename in (
            __file__,
            runpy.__file__,
        ):
            traceback = traceback.tb_next
        sys.excepthook(type(error), error.with_traceback(traceback), traceback)
        status = 1
    return _finish(status)


def _exit_status(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _finish(status: int) -> int:
    """What the interpreter does on its way out: wait for threads, run atexit, flush."""
    try:
        threading._shutdown()
    except Exception:  # a private function: without it, do without
        pass
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            status = status or 120
    return status


# --------------------------------------------------------------------------- the client


class _Server:
    """One server process, started with ``env``: torch is imported under its settings."""

    def __init__(self, env: dict):
        self.folder = tempfile.mkdtemp(prefix="warm-python-")
        request_read, self.request_fd = os.pipe()
        self.reply_fd, reply_write = os.pipe()
        self.env = env
        here = os.path.dirname(os.path.abspath(__file__))
        code = (f"import sys; sys.path.insert(0, {here!r}); import warm_python; "
                f"sys.path.pop(0); warm_python.serve({request_read}, {reply_write})")  # fmt: skip
        with (open(os.path.join(self.folder, "out"), "wb") as out,
              open(os.path.join(self.folder, "err"), "wb") as err):  # fmt: skip
            self.process = subprocess.Popen(
                [sys.executable, "-c", code],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                pass_fds=(request_read, reply_write),
                env=self.env,
                cwd=self.folder,
            )
        os.close(request_read)
        os.close(reply_write)
        self.prefix = None  # what importing torch printed, once the server is ready

    def ready(self) -> bool:
        if self.prefix is None:
            if len(_read_exact(self.reply_fd, 8)) < 8:
                return False
            with open(os.path.join(self.folder, "out"), "rb") as out:
                stdout = out.read()
            with open(os.path.join(self.folder, "err"), "rb") as err:
                stderr = err.read()
            self.prefix = (stdout, stderr)
        return self.process.poll() is None

    def run(self, command, cwd, env, timeout):
        folder = tempfile.mkdtemp(dir=self.folder)
        request = {"command": command, "cwd": cwd, "env": env,
                   "stdout": os.path.join(folder, "stdout"),
                   "stderr": os.path.join(folder, "stderr")}  # fmt: skip
        data = pickle.dumps(request)
        os.write(self.request_fd, struct.pack("<q", len(data)) + data)
        pid, _ = self._reply()
        deadline = None if timeout is None else time.monotonic() + timeout
        timed_out = False
        try:
            while True:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                readable, _, _ = select.select([self.reply_fd], [], [], left)
                if readable:
                    break
                if not timed_out:  # as subprocess.run does: kill it, wait, then raise
                    timed_out = True
                    os.kill(pid, 9)
                deadline = None
        except BaseException:  # a test timeout or ^C while waiting: end the child first
            _kill(pid)
            _read_exact(self.reply_fd, 16)
            raise
        _, returncode = self._reply()
        outputs = []
        for name, prefix in zip(("stdout", "stderr"), self.prefix, strict=True):
            with open(request[name], "rb") as stream:
                outputs.append(prefix + stream.read())
        shutil.rmtree(folder, ignore_errors=True)
        return returncode, outputs, timed_out

    def _reply(self) -> tuple[int, int]:
        reply = _read_exact(self.reply_fd, 16)
        if len(reply) < 16:
            raise RuntimeError(f"the warm Python server ended: see {self.folder}/err")
        return struct.unpack("<qq", reply)

    def close(self):
        os.close(self.request_fd)
        os.close(self.reply_fd)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass


# start-up settings -> the server started with them, or None where it failed to start; one
# at a time: a test that changes a start-up setting of this process for good (torch.compile
# sets TORCHINDUCTOR_CACHE_DIR) retires the server started before it
_servers: dict[frozenset, _Server | None] = {}
_lock = threading.Lock()


def _start(env: dict) -> frozenset:
    key = frozenset(_startup_settings(env).items())
    if key not in _servers:
        if not _servers:
            atexit.register(_close)
        _close()
        _servers[key] = _Server(env)
    return key


def start() -> None:
    """Start the server now, without waiting for it: it imports torch while other work runs."""
    if _FORK and os.environ.get("TESTS_FRESH_PYTHON") != "1":
        with _lock:
            _start(dict(os.environ))


def _get_server(env: dict) -> _Server | None:
    key = _start(env)
    server = _servers[key]
    if server is not None and not server.ready():
        server.close()
        server = _servers[key] = None
    return server


def _close() -> None:
    while _servers:
        server = _servers.pop(next(iter(_servers)))
        if server is not None:
            server.close()


def _decode(data: bytes) -> str:
    # as subprocess.run(text=True) decodes: the locale's encoding, universal newlines
    encoding = "utf-8" if sys.flags.utf8_mode else locale.getpreferredencoding(False)
    return data.decode(encoding).replace("\r\n", "\n").replace("\r", "\n")


def _forkable(command, cwd, env) -> bool:
    if not _FORK or os.environ.get("TESTS_FRESH_PYTHON") == "1":
        return False
    if not isinstance(command, list | tuple) or len(command) < 2 or command[0] != sys.executable:
        return False
    if command[1] in ("-c", "-m"):
        if len(command) < 3:
            return False
    elif str(command[1]).startswith("-") or not os.path.isfile(command[1]):
        return False
    # a start-up setting of this run's own (PYTHONPATH=...): a fresh process
    return os.path.isdir(cwd) and _startup_settings(env) == _startup_settings(os.environ)


def run(
    command,
    *,
    capture_output=False,
    text=False,
    timeout=None,
    cwd=None,
    env=None,
    check=False,
    **kwargs,
) -> subprocess.CompletedProcess:
    """:func:`subprocess.run`, forked from the warm server where that changes nothing."""
    command = [str(part) if isinstance(part, os.PathLike) else part for part in command]
    cwd = os.fspath(cwd) if cwd is not None else os.getcwd()
    env = dict(os.environ if env is None else env)
    if kwargs or not (capture_output and text) or not _forkable(command, cwd, env):
        return subprocess.run(command, capture_output=capture_output, text=text,
                              timeout=timeout, cwd=cwd, env=env, check=check, **kwargs)  # fmt: skip
    with _lock:
        server = _get_server(env)
        if server is None:
            return subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                                  cwd=cwd, env=env, check=check)  # fmt: skip
        returncode, (stdout, stderr), timed_out = server.run(command, cwd, env, timeout)
    stdout, stderr = _decode(stdout), _decode(stderr)
    if timed_out:
        raise subprocess.TimeoutExpired(command, timeout, output=stdout, stderr=stderr)
    done = subprocess.CompletedProcess(command, returncode, stdout, stderr)
    if check:
        done.check_returncode()
    return done
