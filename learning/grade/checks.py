"""Re-run an exercise's checks on a learner's SUBMITTED files, never on a report's word.

The checker (:func:`learning.check.runner.check_exercise`) grades any importable package laid
out like ``exercises/``. The course's own ``exercises/`` is on the check process's path first,
so a submission cannot be imported under that name: it is copied into a temporary folder as
the package :data:`PACKAGE`, with its absolute ``exercises`` imports renamed to match, and
checked there. The learner's files themselves are never modified.

Used by ``python -m learning.grade`` and by the graded cell of the nbgrader notebooks, so one
function decides whether a submission's kernel is correct.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from learning import manifest as manifest_module
from learning.check.runner import ExerciseReport, check_exercise

PACKAGE = "submitted_exercises"
_ABSOLUTE_IMPORT = re.compile(r"^(\s*(?:from|import)\s+)exercises(?=[\s.])", re.MULTILINE)


def check_submission(
    exercise: str,
    folder: Path | str = ".",
    *,
    manifest: manifest_module.Manifest | None = None,
    seed: int | None = None,
) -> ExerciseReport:
    """Run ``exercise``'s checks on ``folder/exercises/``, the learner's submitted package.

    A folder without ``exercises/`` is checked as an empty package: every check fails with the
    checker's own message about the missing module. ``seed`` (the instructor's) fixes every
    input the checks draw; None lets the checker draw fresh ones.
    """
    source = Path(folder) / "exercises"
    with tempfile.TemporaryDirectory(prefix="learning-grade-") as scratch:
        package = Path(scratch) / PACKAGE
        if source.is_dir():
            shutil.copytree(source, package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        package.mkdir(exist_ok=True)
        for module in package.rglob("*.py"):
            text = module.read_text(encoding="utf-8", errors="replace")
            renamed = _ABSOLUTE_IMPORT.sub(rf"\g<1>{PACKAGE}", text)
            if renamed != text:
                module.write_text(renamed, encoding="utf-8")
        # the seed as an argument, never in the environment: learner code could read that
        report = check_exercise(exercise, PACKAGE, extra_path=[scratch], manifest=manifest,
                                seed=seed)  # fmt: skip
    return _as_submitted(report, scratch)


def _as_submitted(report: ExerciseReport, scratch: str) -> ExerciseReport:
    """Messages name ``exercises/...`` as the learner knows it, not the temporary copy."""

    def shown(text: str) -> str:
        text = text.replace(f"{scratch}/{PACKAGE}/", "exercises/").replace(scratch, "")
        return text.replace(f"{PACKAGE}.", "exercises.").replace(f"{PACKAGE}/", "exercises/")

    checks = tuple(replace(check, message=shown(check.message)) for check in report.checks)
    return replace(report, checks=checks, impl="exercises (submitted)")


def summary(report: ExerciseReport) -> str:
    """One line: points, and the names of the checks that failed (or that it is not graded:
    the checker failed twice on it)."""
    if report.incomplete:
        return f"{report.exercise}: not graded (incomplete: the checker failed twice)"
    failed = [check.name for check in report.checks if not check.passed]
    line = f"{report.exercise}: {report.points:g}/{report.max_points:g} points"
    return f"{line}; failed: {', '.join(failed)}" if failed else line


def describe(report: ExerciseReport) -> str:
    """The summary line, then each failed check's message, indented: what a learner reads."""
    lines = [summary(report)]
    for check in report.checks:
        if not check.passed:
            lines.append(f"FAIL {check.name}")
            lines += [f"    {line}" for line in check.message.splitlines()]
    return "\n".join(lines)
