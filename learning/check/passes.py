"""Which exercises the learner's own files pass, as ``python -m learning.check`` last found them.

A lesson shows a reference solution only once the learner's exercise passes (its "After you
pass" section). Grading inside the lesson would cost half a minute a cell, so the checker's
command line keeps a small record instead: when an exercise passes on the learner's files it
writes ``results/local/passed/<exercise>.json`` with the sha256 of each file the exercise
edits (the manifest's ``editable``), and when it does not, it removes that record. A lesson
asks :func:`waiting`, which counts a record only while those files are unchanged: edit the
kernel after it passed, and the reference hides again until the check passes again.

The record is a courtesy to the reader, never a grade: it decides only when a lesson prints
code that ``reference/`` holds anyway. A grade is always computed afresh (``learning.grade``
runs the checks itself and reads no record).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from learning import manifest

REPO = Path(__file__).resolve().parents[2]
RECORDS = Path("results") / "local" / "passed"


def _file_digests(exercise: str, root: Path) -> dict[str, str | None]:
    files = manifest.load(root / manifest.MANIFEST_PATH.name).exercise(exercise).editable
    digests: dict[str, str | None] = {}
    for name in files:
        path = root / name
        digests[name] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
    return digests


def _record_path(exercise: str, root: Path) -> Path:
    return root / RECORDS / f"{exercise}.json"


def digests(exercise: str, root: Path | None = None) -> dict[str, str | None]:
    """The sha256 of each file ``exercise`` edits (None for a missing one)."""
    return _file_digests(exercise, root or REPO)


def note(exercise: str, passed: bool, points: float, max_points: float,
         files: dict[str, str | None], root: Path | None = None) -> Path | None:  # fmt: skip
    """After a check of the learner's files, ``files`` their :func:`digests` taken before it
    ran: keep a record of a pass (written whole, by rename), or remove the record of an earlier
    one. The record's path, or None when there is none."""
    path = _record_path(exercise, root or REPO)
    if not passed:
        path.unlink(missing_ok=True)
        return None
    record = {"exercise": exercise, "points": points, "max_points": max_points,
              "files": files}  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, scratch = tempfile.mkstemp(dir=path.parent, prefix=f".{exercise}.", suffix=".json")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(record, out, indent=1)
            out.write("\n")
        os.replace(scratch, path)
    except BaseException:
        Path(scratch).unlink(missing_ok=True)
        raise
    return path


def waiting(*exercises: str, root: Path | None = None) -> str | None:
    """None when each of ``exercises`` passed its last check with its files as they are now;
    otherwise one line on the first that did not, and the command that checks it."""
    root = root or REPO
    for exercise in exercises:
        command = f"python -m learning.check {exercise}"
        try:
            record = json.loads(_record_path(exercise, root).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return f"{exercise}: not passed yet. Run `{command}`; once every check passes, " \
                   "run this cell again"  # fmt: skip
        if not isinstance(record, dict) or record.get("files") != _file_digests(exercise, root):
            return f"{exercise}: your file changed since it last passed. Run `{command}` " \
                   "again, then this cell"  # fmt: skip
    return None
