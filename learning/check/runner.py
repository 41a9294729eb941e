"""Grading one exercise: :func:`check_exercise` is what the CLI, the tests and the grader call.

The exercise's check module runs in a subprocess (``learning.check.worker``) under the
manifest's time limit for that exercise. Whatever happens there (results, a crash, a timeout)
comes back as a list of :class:`~learning.check.model.CheckResult`, so a learner's mistake is
always a failed check with a message, never a traceback from the checker.

The lesson's journal is read here too and reported without points: whether its prediction and
its observation were written. A journal template marks each place to write with a placeholder
line of its own, in italics, such as ``_Write your prediction here before running._``; a
section counts as written once none of its placeholders is left and some text is.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from learning import manifest as manifest_module
from learning.check.model import CheckResult
from learning.check.worker import RESULT_MARKER

IMPLEMENTATIONS = ("exercises", "reference")
# A journal template's placeholder: a line of its own like "_Write your prediction here..._".
JOURNAL_PLACEHOLDER = re.compile(r"^_Write\b.*\bhere\b.*_$")
JOURNAL_SECTIONS = ("prediction", "observation")
_STDERR_TAIL_BYTES = 16_384


class UnknownExercise(ValueError):
    """The name is not an exercise in the manifest; ``choices`` lists those that are."""

    def __init__(self, name: str, choices: Sequence[str]):
        super().__init__(f"unknown exercise {name!r}; choose one of {', '.join(choices)}")
        self.name = name
        self.choices = tuple(choices)


@dataclass(frozen=True)
class JournalStatus:
    """Whether the learner wrote the lesson's journal; reported, never graded."""

    path: str
    exists: bool
    prediction: bool
    observation: bool

    def as_dict(self) -> dict:
        return {
            "path": self.path,
            "exists": self.exists,
            "prediction": self.prediction,
            "observation": self.observation,
        }


@dataclass(frozen=True)
class ExerciseReport:
    exercise: str
    impl: str
    checks: tuple[CheckResult, ...]
    points: float  # earned, out of the manifest's points for the exercise
    max_points: float
    journal: JournalStatus | None  # None while the exercise's lesson is not written yet
    elapsed_s: float

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(check.passed for check in self.checks)

    def as_dict(self) -> dict:
        return {
            "exercise": self.exercise,
            "impl": self.impl,
            "passed": self.passed,
            "points": self.points,
            "max_points": self.max_points,
            "checks": [check.as_dict() for check in self.checks],
            "journal": self.journal.as_dict() if self.journal else None,
            "elapsed_s": round(self.elapsed_s, 3),
        }


def check_exercise(
    name: str,
    impl: str = "exercises",
    *,
    extra_path: Sequence[Path | str] = (),
    time_limit_s: float | None = None,
    manifest: manifest_module.Manifest | None = None,
) -> ExerciseReport:
    """Run exercise ``name``'s checks against ``impl`` and return the report.

    ``impl`` is ``exercises`` (the learner's files), ``reference``, or any importable package
    laid out like them; ``extra_path`` is put on the check process's ``PYTHONPATH`` so such a
    package can live anywhere (the checker's tests use a temporary directory).
    ``time_limit_s`` overrides the manifest's limit for the whole check process.
    """
    manifest = manifest or manifest_module.load()
    if name not in manifest.exercises:
        raise UnknownExercise(name, list(manifest.exercises))
    if not impl.isidentifier():
        raise ValueError(f"implementation must be a package name, got {impl!r}")
    exercise = manifest.exercise(name)
    limit = exercise.time_limit_s if time_limit_s is None else time_limit_s
    started = time.perf_counter()
    checks = _run_worker(exercise, impl, extra_path, limit)
    elapsed = time.perf_counter() - started
    earned = sum(check.earned for check in checks)
    possible = sum(check.max_points for check in checks)
    points = exercise.points * earned / possible if possible > 0 else 0.0
    lesson = manifest.lesson_of(name)
    return ExerciseReport(
        exercise=name,
        impl=impl,
        checks=tuple(checks),
        points=round(points, 2),
        max_points=exercise.points,
        journal=journal_status(manifest_module.ROOT / lesson.journal) if lesson else None,
        elapsed_s=elapsed,
    )


def _run_worker(
    exercise: manifest_module.Exercise, impl: str, extra_path: Sequence[Path | str], limit_s: float
) -> list[CheckResult]:
    # os.environ carries the Triton backend this process chose when it imported `learning`
    # (TRITON_INTERPRET), so the check process does not import torch just to ask again.
    env = dict(os.environ)
    python_path = [str(manifest_module.ROOT), *map(str, extra_path)]
    if env.get("PYTHONPATH"):
        python_path.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(python_path)
    env.setdefault("PYTHONUNBUFFERED", "1")
    command = [sys.executable, "-m", "learning.check.worker", exercise.name, impl, exercise.check]
    process = subprocess.Popen(
        command,
        cwd=manifest_module.ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, so a timeout ends its children too
    )
    stdout: list[bytes] = []
    stderr: deque[bytes] = deque()
    readers = [
        threading.Thread(target=_drain, args=(stream, sink, tail), daemon=True)
        for stream, sink, tail in (
            (process.stdout, stdout, None),
            (process.stderr, stderr, _STDERR_TAIL_BYTES),
        )
    ]
    for reader in readers:
        reader.start()
    try:
        process.wait(timeout=limit_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill(process)
        process.wait()
    for reader in readers:
        reader.join(timeout=5)
    output = b"".join(stdout).decode("utf-8", "replace")
    log_tail = b"".join(stderr).decode("utf-8", "replace")[-_STDERR_TAIL_BYTES:]

    for line in reversed(output.splitlines()):
        if line.startswith(RESULT_MARKER):
            try:
                return [CheckResult(**item) for item in json.loads(line[len(RESULT_MARKER):])]
            except (ValueError, TypeError) as error:
                reason = f"its results could not be read ({error})"
                return [_process_failure(exercise, reason, log_tail)]
    if timed_out:
        reason = (
            f"it did not finish within {limit_s:g} s, so it was stopped. Something in the code "
            "it ran never returned: look for a loop whose condition never changes, or a wait "
            "that nothing ends"
        )
    elif process.returncode < 0:
        reason = f"it was killed by {_signal_name(-process.returncode)}"
        if -process.returncode == signal.SIGSEGV:
            reason += (
                " (a segmentation fault: the code it ran read or wrote memory it does not own; "
                "look for ctypes, or a kernel pointer offset past the end of a tensor)"
            )
    else:
        reason = (
            f"it ended (exit status {process.returncode}) without reporting results; does the "
            "code call sys.exit() or os._exit() when it is imported?"
        )
    return [_process_failure(exercise, reason, log_tail)]


def _drain(stream, sink, tail_bytes: int | None) -> None:
    """Read ``stream`` to its end into ``sink``, keeping only the last ``tail_bytes`` if set."""
    kept = 0
    for chunk in iter(lambda: stream.read1(65536), b""):
        sink.append(chunk)
        kept += len(chunk)
        while tail_bytes is not None and kept - len(sink[0]) >= tail_bytes:
            kept -= len(sink.popleft())
    stream.close()


def _kill(process: subprocess.Popen) -> None:
    try:
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            process.kill()
    except ProcessLookupError:
        pass


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _process_failure(exercise: manifest_module.Exercise, reason: str, log_tail: str) -> CheckResult:
    message = f"The check process for {exercise.name} failed: {reason}."
    lines = [line for line in log_tail.splitlines() if line.strip()][-15:]
    if lines:
        message += "\nLast lines it wrote:\n" + "\n".join(f"  {line}" for line in lines)
    return CheckResult("check process", passed=False, max_points=exercise.points, message=message)


# --------------------------------------------------------------------------- journal


def journal_status(path: Path) -> JournalStatus:
    """Which of the journal's sections hold the learner's own text (placeholders removed)."""
    try:
        shown = str(path.relative_to(manifest_module.ROOT))
    except ValueError:
        shown = str(path)
    if not path.is_file():
        return JournalStatus(shown, exists=False, prediction=False, observation=False)
    written = _written_sections(path.read_text(encoding="utf-8"))
    return JournalStatus(
        shown, exists=True, prediction="prediction" in written, observation="observation" in written
    )


def _written_sections(text: str) -> set[str]:
    """The sections (``## Prediction ...``) with text in them and no placeholder left."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)
    has_text: set[str] = set()
    has_placeholder: set[str] = set()
    section = None
    for line in text.splitlines():
        heading = re.match(r"^(#{1,2})\s+(.*)$", line)
        if heading:
            title = heading.group(2).strip().lower()
            section = next((name for name in JOURNAL_SECTIONS if title.startswith(name)), None)
        elif section and JOURNAL_PLACEHOLDER.match(line.strip()):
            has_placeholder.add(section)
        elif section and line.strip():
            has_text.add(section)
    return has_text - has_placeholder
