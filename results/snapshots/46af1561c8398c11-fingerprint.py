"""Which source files a run executed, and their SHA-256: the report's fingerprint.

Three groups of files, chosen by what the run actually loaded, never by listing folders:

* the engine: every ``learning/`` module in ``sys.modules`` (found through ``__file__``), plus
  the report schema;
* the implementations the run called: for each kernel module, its file, its packages'
  ``__init__.py`` files, and every module of the same package that it refers to (a helper such
  as ``kernels.row_plan``), followed transitively. A reference run calls only ``reference/``
  modules, so it can never fingerprint ``exercises/``; a learner run calls both.

Paths are repository-relative (``learning/ops.py``); a file outside the repository (a test's
throwaway package) keeps its absolute path.

Snapshots (``results/snapshots/<hash prefix>-<name>``) preserve the exact source a report
measured, so a later edit of that file does not invalidate an old timing.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = REPO_ROOT / "learning" / "schemas" / "report-v2.json"
SNAPSHOT_DIR = "results/snapshots"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def report_path(path: Path, repo_root: Path = REPO_ROOT) -> str:
    """The name a file gets in a report: repository-relative when inside it, absolute if not."""
    resolved = Path(path).resolve()
    try:
        return resolved.relative_to(repo_root.resolve()).as_posix()
    except ValueError:
        return resolved.as_posix()


def resolve_report_path(name: str, repo_root: Path = REPO_ROOT) -> Path:
    path = Path(name)
    return path if path.is_absolute() else repo_root / path


def _module_file(module: ModuleType) -> Path | None:
    name = getattr(module, "__file__", None)
    return Path(name).resolve() if name else None


def _defining_module(value: object) -> ModuleType | None:
    try:
        name = getattr(value, "__module__", None)
    except Exception:  # an object whose attribute lookup itself fails
        return None
    return sys.modules.get(name) if isinstance(name, str) else None


def engine_files(repo_root: Path = REPO_ROOT) -> list[Path]:
    """Every loaded ``learning/`` module's file, and the schema the report is written against."""
    engine_dir = (repo_root / "learning").resolve()
    files = {SCHEMA_PATH.resolve()}
    for module in list(sys.modules.values()):
        path = _module_file(module) if isinstance(module, ModuleType) else None
        if path is not None and path.is_relative_to(engine_dir) and path.suffix == ".py":
            files.add(path)
    return sorted(files)


def implementation_files(modules: Iterable[ModuleType]) -> list[Path]:
    """The files behind these kernel modules: parents' ``__init__``s and same-package helpers."""
    files: set[Path] = set()
    seen: set[str] = set()
    pending = list(modules)
    while pending:
        module = pending.pop()
        if module.__name__ in seen:
            continue
        seen.add(module.__name__)
        path = _module_file(module)
        if path is not None:
            files.add(path)
        top = module.__name__.split(".")[0]
        # The packages above it (``reference``, ``reference.kernels``) ran their __init__.
        parts = module.__name__.split(".")
        for depth in range(1, len(parts)):
            parent = sys.modules.get(".".join(parts[:depth]))
            if parent is not None:
                pending.append(parent)
        # Helpers of the same top-level package that it refers to, followed transitively.
        for value in list(vars(module).values()):
            owner = value if isinstance(value, ModuleType) else _defining_module(value)
            if owner is not None and owner.__name__.split(".")[0] == top:
                pending.append(owner)
    return sorted(files)


def fingerprint(files: Iterable[Path], repo_root: Path = REPO_ROOT) -> dict[str, str]:
    """``{report path: sha256}`` for each file, sorted by path."""
    table = {report_path(path, repo_root): sha256_file(path) for path in files}
    return dict(sorted(table.items()))


def snapshot_name(path: str, digest: str) -> str:
    return f"{SNAPSHOT_DIR}/{digest[:16]}-{Path(path).name}"


def git_blob_with_hash(path: str, digest: str, repo_root: Path = REPO_ROOT) -> bytes | None:
    """The content of ``path`` in any commit of the history whose SHA-256 is ``digest``."""
    try:
        commits = subprocess.run(
            ["git", "-C", str(repo_root), "log", "--format=%H", "--", path],
            capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    for commit in commits:
        shown = subprocess.run(
            ["git", "-C", str(repo_root), "show", f"{commit}:{path}"], capture_output=True
        )
        if shown.returncode == 0 and hashlib.sha256(shown.stdout).hexdigest() == digest:
            return shown.stdout
    return None


def create_snapshots(
    report: dict,
    repo_root: Path = REPO_ROOT,
    paths: Iterable[str] | None = None,
    from_git: bool = False,
) -> tuple[dict[str, str], list[str]]:
    """Copy each fingerprinted file whose live content still has the recorded hash.

    With ``from_git``, a file that changed since the run is taken from the first commit in its
    history whose content has the recorded hash (the hash proves it is the measured source).
    Returns the report's new ``source_snapshots`` mapping and one line per file that could not
    be preserved. The report itself is not modified.
    """
    recorded: Mapping[str, str] = report.get("fingerprint", {}).get("files", {})
    snapshots = dict(report.get("source_snapshots") or {})
    problems = []
    for path in paths if paths is not None else recorded:
        digest = recorded.get(path)
        if digest is None:
            problems.append(f"{path}: not in the report's fingerprint")
            continue
        if path in snapshots:
            continue
        live = resolve_report_path(path, repo_root)
        name = snapshot_name(path, digest)
        target = repo_root / name
        if live.is_file() and sha256_file(live) == digest:
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists():
                shutil.copyfile(live, target)
        else:
            blob = git_blob_with_hash(path, digest, repo_root) if from_git else None
            if blob is None:
                problems.append(f"{path}: changed since the run; the measured source is gone")
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists():
                target.write_bytes(blob)
        snapshots[path] = name
    return dict(sorted(snapshots.items())), problems
