"""Script records: what a measurement script (not ``kernel-bench``) writes, fingerprinted.

``kernel-bench`` writes schema-v2 reports. The companion scripts (tuning tables, plan sweeps,
the clock probe, the stability sweep, the CUDA program's runs) each have their own output; a
script record wraps that output in an envelope that says which script made it, with which
arguments, and the SHA-256 of every source file it executed, so the same validator can tell
whether a recorded figure still describes the code in the repository::

    {"record": "script-output", "record_version": 1, "script": "scripts/tune_gemm.py",
     "argv": [...], "recorded_at": "...",
     "fingerprint": {"algorithm": "sha256", "files": {...}, "normalized": {...}},
     "source_snapshots": {...}, "fingerprint_note": null, "data": <the script's output>}

``fingerprint_note`` is for records whose fingerprint was attached after the run (from the
commit the run's working tree matched); a script writing its own record leaves it null.
"""

from __future__ import annotations

import datetime
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType

from learning.report.fingerprint import REPO_ROOT, fingerprint_record, report_path

RECORD_KIND = "script-output"
RECORD_VERSION = 1
RECORD_SCHEMA_PATH = REPO_ROOT / "learning" / "schemas" / "script-record-v1.json"
_SOURCE_DIRS = ("learning", "reference", "exercises", "scripts")


def is_record(document: object) -> bool:
    return isinstance(document, dict) and document.get("record") == RECORD_KIND


def loaded_source_files(repo_root: Path = REPO_ROOT) -> list[Path]:
    """Every loaded module's file under ``learning/``, ``reference/``, ``exercises/``,
    ``scripts/``: what a script executed (its own file included when run as ``__main__``)."""
    roots = [(repo_root / name).resolve() for name in _SOURCE_DIRS]
    files = set()
    for module in list(sys.modules.values()):
        name = getattr(module, "__file__", None) if isinstance(module, ModuleType) else None
        if not name or not name.endswith(".py"):
            continue
        path = Path(name).resolve()
        if any(path.is_relative_to(root) for root in roots):
            files.add(path)
    return sorted(files)


def make_record(
    script: str | Path,
    data: object,
    *,
    argv: Sequence[str] | None = None,
    extra_files: Iterable[Path] = (),
    repo_root: Path = REPO_ROOT,
) -> dict:
    """The record of one run of ``script`` whose output is ``data`` (JSON-serialisable).

    The fingerprint covers every loaded course module (see :func:`loaded_source_files`), the
    script itself and ``extra_files`` (sources that are not Python modules, such as
    ``cuda/softmax.cu``).
    """
    files = {*loaded_source_files(repo_root), Path(script).resolve(), *map(Path, extra_files)}
    return {
        "record": RECORD_KIND,
        "record_version": RECORD_VERSION,
        "script": report_path(Path(script), repo_root),
        "argv": list(sys.argv[1:] if argv is None else argv),
        "recorded_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "fingerprint": fingerprint_record(files, repo_root),
        "source_snapshots": {},
        "fingerprint_note": None,
        "data": data,
    }


def write_record(path: str | Path, script: str | Path, data: object, **options) -> Path:
    """Write :func:`make_record` atomically to ``path`` (a temporary file, then a rename)."""
    from learning.report import write_atomic

    return write_atomic(make_record(script, data, **options), Path(path))


def load_data(path: str | Path) -> object:
    """A recorded output's data: the ``data`` of a script record, or the file as it is."""
    document = json.loads(Path(path).read_text())
    return document["data"] if is_record(document) else document
