"""Which source files a run executed, and their SHA-256: the report's fingerprint.

Three groups of files, chosen by what the run actually loaded, never by listing folders:

* the engine: every ``learning/`` module in ``sys.modules`` (found through ``__file__``), plus
  the report schema;
* the implementations the run called: for each kernel module, its file, its packages'
  ``__init__.py`` files, and every module of the same package that it refers to (a helper such
  as ``kernels.row_plan``), followed transitively. A reference run calls only ``reference/``
  modules, so it can never fingerprint ``exercises/``; a learner run calls both.

Paths are repository-relative (``learning/ops/spec.py``); a file outside the repository (a test's
throwaway package) keeps its absolute path.

Each file gets two hashes: ``files`` holds the SHA-256 of its bytes, ``normalized`` that of what
it does (``learning.report.normalize``: a Python file's tokens less comments, docstrings and
layout), which is what validation compares; a comment or docstring fixed after the run leaves
the report valid.

Snapshots (``results/snapshots/<hash prefix>-<name>``) preserve the exact source a report
measured, so a later edit of that file does not invalidate an old timing.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType

from learning.report.normalize import normalized_sha256

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


_NORMALIZED: dict[tuple[str, str], str] = {}  # (sha256, suffix) -> normalised hash


def file_hashes(path: Path, name: str | None = None) -> tuple[str, str]:
    """``(sha256, normalised hash)`` of the file at ``path``, a source called ``name`` (by
    default the file's own name; only its suffix matters). A content seen before is not
    normalised again."""
    content = Path(path).read_bytes()
    raw = hashlib.sha256(content).hexdigest()
    name = name or Path(path).name
    key = (raw, Path(name).suffix)
    if key not in _NORMALIZED:
        _NORMALIZED[key] = normalized_sha256(content, name)
    return raw, _NORMALIZED[key]


def fingerprint_record(files: Iterable[Path], repo_root: Path = REPO_ROOT) -> dict:
    """A report's ``fingerprint``: ``files`` (each file's sha256) and ``normalized`` (each
    file's normalised hash), keyed and sorted by report path."""
    raw, normalized = {}, {}
    for path in files:
        name = report_path(path, repo_root)
        raw[name], normalized[name] = file_hashes(path)
    return {
        "algorithm": "sha256",
        "files": dict(sorted(raw.items())),
        "normalized": dict(sorted(normalized.items())),
    }


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


def measured_source(
    report: dict, path: str, repo_root: Path = REPO_ROOT, from_git: bool = False
) -> bytes | None:
    """The content the run measured as ``path``, proved by its recorded sha256: the report's
    snapshot, the file itself while it is unchanged, or (with ``from_git``) the first commit
    in its history with that content. None when none of them has it."""
    digest = report.get("fingerprint", {}).get("files", {}).get(path)
    if digest is None:
        return None
    snapshot = (report.get("source_snapshots") or {}).get(path)
    candidates = [repo_root / snapshot] if snapshot else []
    candidates.append(resolve_report_path(path, repo_root))
    for candidate in candidates:
        if candidate.is_file():
            content = candidate.read_bytes()
            if hashlib.sha256(content).hexdigest() == digest:
                return content
    return git_blob_with_hash(path, digest, repo_root) if from_git else None


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
    live_only = {**report, "source_snapshots": {}}  # a file is copied from itself or git
    problems = []
    for path in paths if paths is not None else recorded:
        digest = recorded.get(path)
        if digest is None:
            problems.append(f"{path}: not in the report's fingerprint")
            continue
        if path in snapshots:
            continue
        content = measured_source(live_only, path, repo_root, from_git)
        if content is None:
            problems.append(f"{path}: changed since the run; the measured source is gone")
            continue
        name = snapshot_name(path, digest)
        target = repo_root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.write_bytes(content)
        snapshots[path] = name
    return dict(sorted(snapshots.items())), problems


def normalized_from_measured(
    report: dict, repo_root: Path = REPO_ROOT
) -> tuple[dict[str, str], list[str]]:
    """``fingerprint.normalized`` for a report recorded without it, computed from the content
    each file had when it was measured (see :func:`measured_source`; the commit history is
    searched too), never from an edited file. Returns the mapping and one line per file whose
    measured content is gone (it keeps being compared by its sha256). The report itself is not
    modified."""
    normalized, problems = {}, []
    for path in report["fingerprint"]["files"]:
        content = measured_source(report, path, repo_root, from_git=True)
        if content is None:
            problems.append(f"{path}: the measured source is gone; it keeps its sha256 only")
        else:
            normalized[path] = normalized_sha256(content, path)
    return dict(sorted(normalized.items())), problems
