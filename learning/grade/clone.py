"""A learner's working copy of a release, made in any folder, and a benchmark run inside it.

A report names files relative to the checkout it was run in (``exercises/kernels/add.py``), so
a genuine learner report can only come from a learner-shaped checkout: the release's
``learning/``, ``reference/`` and ``exercises/`` and its manifest, with the learner's own files
in place. The tests, ``scripts/grade_benchmark.py`` and an instructor trying the grader on a
made-up class use these functions to produce exactly what a learner would submit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from learning.report import REPO_ROOT

RELEASE_PARTS = ("learning", "reference", "exercises", "course_manifest.toml")
SUBMITTED_PARTS = ("exercises", "journals")
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc")


def make_clone(
    destination: Path, release_root: Path = REPO_ROOT, learner_files: Mapping[str, Path] = {}
) -> Path:
    """Copy the release's runnable parts to ``destination``; ``learner_files`` maps a path
    under it (``exercises/kernels/add.py``) to the file the learner wrote there."""
    destination.mkdir(parents=True, exist_ok=True)
    for part in RELEASE_PARTS:
        source = release_root / part
        if source.is_dir():
            shutil.copytree(source, destination / part, ignore=_IGNORE, dirs_exist_ok=True)
        elif source.is_file():
            shutil.copy2(source, destination / part)
    for path, source in learner_files.items():
        target = destination / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return destination


def run_bench(
    clone: Path, arguments: Sequence[str], output: Path, timeout_s: float | None = None
) -> Path:
    """Run ``kernel-bench ARGUMENTS --output OUTPUT`` in ``clone``, with the clone's own code,
    in a fresh process; RuntimeError when it fails or runs past ``timeout_s``."""
    environment = {**os.environ, "PYTHONPATH": str(clone)}
    try:
        completed = subprocess.run(
            [sys.executable, "-m", "learning.bench", *arguments, "--output", str(output)],
            cwd=clone,
            env=environment,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"kernel-bench ran past {timeout_s:g} s in {clone}") from None
    if completed.returncode != 0:
        raise RuntimeError(f"kernel-bench failed in {clone}:\n{completed.stderr[-4000:]}")
    return output


def submit(clone: Path, submissions_dir: Path, learner: str, reports: Sequence[Path]) -> Path:
    """Lay out ``submissions_dir/<learner>/`` as the grader reads it: the learner's folders
    copied from the clone, and ``reports/`` holding ``reports``."""
    folder = submissions_dir / learner
    for part in SUBMITTED_PARTS:
        if (clone / part).is_dir():
            shutil.copytree(clone / part, folder / part, ignore=_IGNORE, dirs_exist_ok=True)
    (folder / "reports").mkdir(parents=True, exist_ok=True)
    for report in reports:
        shutil.copyfile(report, folder / "reports" / Path(report).name)
    return folder
