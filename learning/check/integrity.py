"""What learner code could do to the machine, and how the trusted side sees it afterwards.

The worker that runs a learner's code has the same user as the checker, so it can write any
file the checker can and start processes that outlive it. Two things follow, and this module
answers both:

* **Files.** A worker could rewrite a course file (``learning/check/replay/play.py``), a
  library file (``triton/runtime/interpreter.py``), or add a ``.pth`` file to
  ``site-packages``, so that the *next* process the checker starts (the replay, the next
  worker, the next learner's check in a class run) runs its code. :func:`snapshot` records,
  before any learner code runs, the identity of every file the trusted process has loaded
  (each module's source and its cached bytecode) and of every directory those files and the
  import path live in; :func:`changed` lists what differs afterwards. A file's identity is its
  inode, size, modification time and *change* time: the change time moves on every write,
  rename or ``chmod`` and no unprivileged process can set it back, so ``os.utime`` does not
  hide an edit. A directory's identity is its inode and the entries in it that Python can load
  code from (:func:`loadable`): a module, a package, a ``.pth`` file, a distribution's
  metadata, each with its inode, so a new one (a shadowing module, a ``.pth`` file), a removed
  one and one replaced by a rename are all seen. Other entries are not compared: a log, a
  report or a temporary file that another program on the machine writes beside the course
  (a test run, an editor) is no code any process of the checker runs, and counting it would
  take an honest learner's marks for another program's work. The learner's own package is
  left out: it is theirs to edit.
* **Memory.** A worker is a descendant of the checker and runs as its user, so through
  ``/proc/PID`` it could read the checker's memory, environment and open files (the run's
  seed, which decides the hidden inputs) or write its memory (a verdict). :func:`hidden`
  marks the checker not dumpable while learner code runs (Linux's ``PR_SET_DUMPABLE``): those
  entries then belong to root, and no process of the user can open them or trace it.
* **Processes.** A worker could fork a child that calls ``setsid`` and so leaves the worker's
  process group, then keeps running while the checker replays kernels or grades the next
  learner. :func:`become_subreaper` makes the checker the parent every orphan of its children
  is handed to (Linux's ``PR_SET_CHILD_SUBREAPER``), and :func:`kill_strays` then ends every
  child process the checker did not start itself, repeatedly, until none is left.

Neither is a sandbox: code that runs as root, or a C extension that changes the kernel's idea of
time, is out of reach. Both turn what the worker did into evidence the trusted side reads.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.machinery
import importlib.util
import os
import signal
import stat
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

_PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
_PR_GET_DUMPABLE, _PR_SET_DUMPABLE = 3, 4


# Names Python loads code or plugins from besides modules and packages: path configuration
# files, a distribution's metadata (its entry points), eggs and zip archives on the path.
_LOADABLE_SUFFIXES = (".pth", ".dist-info", ".egg-info", ".egg-link", ".egg", ".zip")


@dataclass(frozen=True)
class DiskState:
    """Each watched path's identity, or None where it was absent: a file's (inode, size,
    mtime, ctime), a directory's (inode, its loadable entries with their inodes)."""

    entries: dict[str, tuple | None]


def loadable(name: str, folder: bool) -> bool:
    """Whether an entry of this name in a folder on the import path (or of a package) can be
    loaded as code: ``name.py``, ``name.pyc``, an extension module, a package or namespace
    ``folder`` (``__pycache__`` too), a ``.pth`` file, a distribution's metadata. ``name``
    must be an identifier where Python imports it by name."""
    if name.endswith(_LOADABLE_SUFFIXES):
        return True
    if folder:
        return name.isidentifier()
    for suffix in sorted(importlib.machinery.all_suffixes(), key=len, reverse=True):
        if name.endswith(suffix):
            return name[: -len(suffix)].isidentifier()
    return False


def _is_folder(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir() or entry.is_symlink()  # a link may point to a folder later
    except OSError:
        return True


def _identity(path: str) -> tuple | None:
    try:
        status = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(status.st_mode):
        return (status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)
    try:
        with os.scandir(path) as entries:
            listed = frozenset(
                (e.name, e.inode()) for e in entries if loadable(e.name, _is_folder(e))
            )
    except OSError:
        listed = None  # unreadable now: compared as such
    return (status.st_ino, listed)


def _inside(path: str, folders: Sequence[str]) -> bool:
    return any(path == folder or path.startswith(folder + os.sep) for folder in folders)


def watched_paths(exclude: Iterable[Path | str] = ()) -> list[str]:
    """The files this process has loaded as modules (source and bytecode), their folders and
    every folder on the import path, minus anything under ``exclude``."""
    skip = [os.path.realpath(str(folder)) for folder in exclude]
    paths: set[str] = set()
    for entry in sys.path:
        folder = os.path.realpath(entry or os.getcwd())
        if os.path.isdir(folder):
            paths.add(folder)
    for module in list(sys.modules.values()):
        source = getattr(module, "__file__", None)
        if not isinstance(source, str):
            continue
        source = os.path.realpath(source)
        paths.add(source)
        paths.add(os.path.dirname(source))
        if source.endswith(".py"):
            try:
                paths.add(importlib.util.cache_from_source(source))
            except (NotImplementedError, ValueError):
                pass
    return sorted(path for path in paths if not _inside(path, skip))


def snapshot(exclude: Iterable[Path | str] = ()) -> DiskState:
    """The identity of everything :func:`watched_paths` names, now."""
    return DiskState({path: _identity(path) for path in watched_paths(exclude)})


def changed(before: DiskState, limit: int = 5) -> list[str]:
    """The watched paths whose identity differs from ``before`` (at most ``limit``, then a
    count of the rest); an empty list when nothing did."""
    differ = [path for path, identity in before.entries.items() if _identity(path) != identity]
    shown = differ[:limit]
    if len(differ) > limit:
        shown.append(f"and {len(differ) - limit} more")
    return shown


# --------------------------------------------------------------------------- memory


def _prctl(option: int, value: int = 0) -> int | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        result = ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        return None
    return None if result < 0 else result


def dumpable() -> bool | None:
    """Whether this process is dumpable now (None where that cannot be read: not Linux)."""
    state = _prctl(_PR_GET_DUMPABLE)
    return None if state is None else state == 1


_hiding_lock = threading.Lock()
_hiding = {"depth": 0, "restore": False}


@contextlib.contextmanager
def hidden() -> Iterator[None]:
    """This process not dumpable while the block runs (nested and threaded blocks too), then
    as it was. Not dumpable, its ``/proc/PID/mem``, ``environ``, ``fd`` and ``maps`` belong to
    root, and no other process of its user can open them or trace it. Root can, and
    ``/proc/PID/cmdline`` stays readable by everyone: a secret is never put there."""
    with _hiding_lock:
        if _hiding["depth"] == 0:
            _hiding["restore"] = dumpable() is True
            _prctl(_PR_SET_DUMPABLE, 0)
        _hiding["depth"] += 1
    try:
        yield
    finally:
        with _hiding_lock:
            _hiding["depth"] -= 1
            if _hiding["depth"] == 0 and _hiding["restore"]:
                _prctl(_PR_SET_DUMPABLE, 1)


# --------------------------------------------------------------------------- processes


def become_subreaper() -> bool:
    """Make this process the parent of its children's orphans (Linux); False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def children(parent: int | None = None) -> list[int]:
    """The process ids whose parent is ``parent`` (this process by default), from /proc."""
    parent = os.getpid() if parent is None else parent
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and int(fields[1]) == parent:
            found.append(int(name))
    return found


def kill_strays(keep: Iterable[int] = (), settle_s: float = 0.05, limit_s: float = 10.0) -> int:
    """Kill every child of this process not in ``keep`` until none is left; the number killed.

    ``keep`` must hold every child the caller started or may have (take ``children()`` before
    the worker starts, and add the trusted processes started since): anything else is killed.
    Run after a worker's own process group was killed: its escaped descendants are orphans,
    which a subreaper (:func:`become_subreaper`) receives as children. Each pass kills what it
    finds and reaps it; the grandchildren of a killed process arrive as children next pass.
    """
    keep = set(keep)
    killed = 0
    quiet_passes = 0
    deadline = time.monotonic() + limit_s
    while quiet_passes < 2 and time.monotonic() < deadline:
        strays = [pid for pid in children() if pid not in keep]
        if not strays:
            quiet_passes += 1
            time.sleep(settle_s)
            continue
        quiet_passes = 0
        for pid in strays:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                continue
        for pid in strays:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:  # reaped elsewhere (a Popen object owns it)
                pass
    return killed


__all__ = [
    "DiskState",
    "become_subreaper",
    "changed",
    "children",
    "dumpable",
    "hidden",
    "kill_strays",
    "loadable",
    "snapshot",
    "watched_paths",
]
