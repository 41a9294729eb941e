"""Grading one exercise: :func:`check_exercise` is what the CLI, the tests and the grader call.

The exercise's check module runs here, in the process that calls :func:`check_exercise`, which
never imports the learner's code: every call into it is a request to a worker process
(:mod:`learning.check.remote`), and what comes back is data the checks compare with values
they computed themselves. Every :class:`~learning.check.model.CheckResult` is built on this
side, so nothing the learner's code does (print, raise, patch, forge, crash, hang) reaches a
verdict: a mistake is a failed check with a message, never a traceback from the checker. The
manifest's time limit bounds the whole exercise. It, and every limit inside the checks, is in
seconds of the course's reference machine: the run measures this machine's pace once
(:mod:`learning.check.pace`) and multiplies them all by it, so that a slow or loaded machine
does not cost an honest kernel its points.

A check module that fails by itself (it raises, or returns something other than its results)
is a fault of the checker, not of the learner's code: the run is done again once, from fresh
processes and with the same seed; a second failure makes the report ``incomplete``, which the
CLI and the grader say as such (a status of its own and an exit status of 3), never as a quiet
0 points.

The lesson's journal is read here too and reported without points: which of its prompts hold
an answer in the learner's own words (:mod:`learning.check.journal`).
"""

from __future__ import annotations

import importlib
import math
import re
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from learning import manifest as manifest_module
from learning.check import forkserver, integrity, known_answers, pace
from learning.check.journal import JournalStatus, journal_status
from learning.check.model import CheckResult
from learning.check.remote import REPO, ProcessDied, Session, TimeUp, log_lines, python_path
from learning.check.seeds import run_seed
from learning.check.worker import one_thread_while

IMPLEMENTATIONS = ("exercises", "reference")  # the learner's and the course's answers
_COURSES = IMPLEMENTATIONS[1]  # the reference: graded for the course, it has no journal


class UnknownExercise(ValueError):
    """The name is not an exercise in the manifest; ``choices`` lists those that are."""

    def __init__(self, name: str, choices: Sequence[str]):
        super().__init__(f"unknown exercise {name!r}; choose one of {', '.join(choices)}")
        self.name = name
        self.choices = tuple(choices)


@dataclass(frozen=True)
class ExerciseReport:
    exercise: str
    impl: str
    checks: tuple[CheckResult, ...]
    points: float  # earned, out of the manifest's points for the exercise
    max_points: float
    journal: JournalStatus | None  # None while the exercise's lesson is not written yet
    elapsed_s: float
    incomplete: bool = False  # the check module failed twice: not graded, not 0 points

    @property
    def passed(self) -> bool:
        return not self.incomplete and bool(self.checks) and all(c.passed for c in self.checks)

    def as_dict(self) -> dict:
        return {
            "exercise": self.exercise,
            "impl": self.impl,
            "passed": self.passed,
            "incomplete": self.incomplete,
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
    seed: int | None = None,
    reference_copies: bool = False,
) -> ExerciseReport:
    """Run exercise ``name``'s checks against ``impl`` and return the report.

    ``impl`` is ``exercises`` (the learner's files), ``reference``, or any importable package
    laid out like them; ``extra_path`` is put on the worker's ``PYTHONPATH`` so such a
    package can live anywhere (the checker's tests use a temporary directory).
    ``time_limit_s`` overrides the manifest's limit for the whole exercise. ``seed`` is the
    run's seed (the grader passes its own); by default ``LEARNING_CHECK_SEED`` or a fresh one.
    ``reference_copies``: let kernels copied from ``reference/`` earn points. Only the course's
    own tests set it, to grade the reference's kernels under another package's name; the CLI
    and the grader never do (:mod:`learning.check.originality`).
    """
    manifest = manifest or manifest_module.load()
    if name not in manifest.exercises:
        raise UnknownExercise(name, list(manifest.exercises))
    if not impl.isidentifier():
        raise ValueError(f"implementation must be a package name, got {impl!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ValueError(f"seed must be a whole number >= 0, got {seed!r}")
    exercise = manifest.exercise(name)
    limit = exercise.time_limit_s if time_limit_s is None else time_limit_s
    started = time.perf_counter()
    slowdown = pace.slowdown()  # once a run, before any process of the checks starts
    seed = run_seed(2**31) if seed is None else seed  # the same for a run done again
    with integrity.hidden():  # the seed and the verdicts out of the worker's reach (/proc)
        for _ in range(2):  # a second run only when the check module failed by itself
            checks, fault = _run_checks(exercise, impl, extra_path, limit, seed,
                                        reference_copies, slowdown)  # fmt: skip
            if fault is None:
                break
    if fault is not None:
        checks = [_check_module_failure(exercise, fault)]
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
        # The journal is the learner's: a run that grades the reference has none to show.
        journal=journal_status(manifest_module.ROOT / lesson.journal)
        if lesson and impl != _COURSES else None,
        elapsed_s=elapsed,
        incomplete=fault is not None,
    )


def _run_checks(
    exercise: manifest_module.Exercise,
    impl: str,
    extra_path: Sequence[Path | str],
    limit_s: float,
    seed: int | None,
    reference_copies: bool = False,
    slowdown: float = 1.0,
) -> tuple[list[CheckResult], Exception | None]:
    """The check module's results, built here, or the error it failed with by itself;
    whatever the learner's code does in the worker (a crash while its module imports, the
    whole time limit spent) is a failed check. ``limit_s`` is in seconds of the reference
    machine; ``slowdown`` multiplies it and every limit the checks ask the session for."""
    try:
        module = importlib.import_module(exercise.check)
    except Exception as error:  # the manifest names a check module that does not import
        return [], error
    session = Session(exercise.name, impl, extra_path=extra_path, seed=seed,
                      time_limit_s=math.ceil(limit_s * slowdown * 10) / 10,
                      kernels=getattr(module, "RECORDS_KERNELS", False),
                      copies_allowed=reference_copies, slowdown=slowdown)  # fmt: skip
    # The worker runs as this process's user: what it could leave behind (a process outside
    # its group, a changed file that a later process of the checker would load) is looked for
    # once it has ended (learning.check.integrity).
    integrity.become_subreaper()
    own_children = set(integrity.children())
    on_disk = integrity.snapshot(exclude=_learner_folders(impl, extra_path))
    # read before any learner code runs; the kernel checks read and judge their own files
    copied = {} if reference_copies or getattr(module, "RECORDS_KERNELS", False) else (
        known_answers.copied_functions(_learner_files(exercise, impl, extra_path)))  # fmt: skip
    try:
        results, error = _grade(module, exercise, impl, session)
        results = _without_copies(results, copied)
    finally:
        session.close()
        # the process servers the checker started meanwhile are its own (forkserver)
        integrity.kill_strays(keep=own_children | forkserver.pids())
    changed = integrity.changed(on_disk)
    if changed:
        reason = (
            "not graded: while your code ran it changed files the checker itself runs "
            f"({', '.join(changed)}), so no result of this run can be trusted. A kernel "
            "exercise never needs to write a file; reinstall the course (git checkout, "
            "make course) before checking again"
        )
        return [CheckResult(r.name, False, r.max_points, reason) for r in results] or [
            CheckResult("check process", False, exercise.points, reason)
        ], None
    return results, error


def _learner_files(exercise: manifest_module.Exercise, impl: str,
                   extra_path: Sequence[Path | str]) -> dict[str, str]:  # fmt: skip
    """The text of each file the exercise edits, in the package ``impl`` as the worker finds
    it (its sys.path: the course first, then PYTHONPATH), by looking at folders; none for the
    reference itself."""
    if impl == "reference":
        return {}
    for entry in [REPO, *map(Path, python_path(extra_path))]:
        if (entry / impl / "__init__.py").is_file():
            break
    else:
        return {}
    found = {}
    for path in exercise.editable:
        relative = path.partition("/")[2]  # exercises/measurement.py -> measurement.py
        try:
            found[f"{impl}/{relative}"] = (entry / impl / relative).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # a file that is not there is graded as missing by the checks
    return found


def _without_copies(results: list[CheckResult], copied: dict[str, str]) -> list[CheckResult]:
    """``results`` with every check of a copied function failed, giving the reason: a check
    names the functions it grades; ``"*"`` (everything imported) fails every check."""
    if not copied:
        return results
    kept = []
    for result in results:
        named = [name for name in re.findall(r"\w+", result.name) if name in copied]
        if result.max_points and (named or "*" in copied):
            reason = copied[named[0] if named else "*"]
            kept.append(CheckResult(result.name, False, result.max_points,
                                    f"not graded: {reason}.\n{COPIED}"))  # fmt: skip
        else:
            kept.append(result)
    return kept


COPIED = (
    "reference/ holds the course's answers, to compare with once yours passes, not to hand in: "
    "write the function yourself (the TODOs in your file say what it must do). If you did "
    "write it yourself, show it to your instructor"
)


def _learner_folders(impl: str, extra_path: Sequence[Path | str]) -> list[Path]:
    """Where the learner's package can live: theirs to change while it runs."""
    return [manifest_module.ROOT / impl, *(Path(folder) / impl for folder in extra_path)]


def _grade(
    module, exercise, impl: str, session: Session
) -> tuple[list[CheckResult], Exception | None]:
    """The check module's results, or no results and the error it failed with by itself."""
    try:
        with one_thread_while():
            results = module.run(exercise.name, impl, session=session)
    except TimeUp as stopped:
        reason = (
            f"it did not finish within {stopped.limit_s:g} s, so it was stopped. Something in "
            "the code it ran never returned: look for a loop whose condition never changes, or "
            "a wait that nothing ends"
        )
        return [_process_failure(exercise, reason, stopped.log_tail)], None
    except ProcessDied as died:  # while the learner's module was imported: nothing to grade
        return [_process_failure(exercise, died.reason, died.log_tail)], None
    except Exception as error:  # a fault in the check module, not in the learner's code
        return [], error
    if not isinstance(results, list) or not all(type(r) is CheckResult for r in results):
        return [], TypeError(f"{exercise.check}.run did not return a list of CheckResult")
    return results, None


def _check_module_failure(exercise: manifest_module.Exercise, error: Exception) -> CheckResult:
    """The one result of a run whose check module failed twice (the second time on fresh
    processes): ``error`` is the second failure's."""
    frames = traceback.format_exception(error, limit=-3)
    message = (
        f"the check module {exercise.check} failed twice, the second time on fresh processes, "
        "before it could grade everything: "
        f"{type(error).__name__}: {error}\n"
        "This is a fault in the checks, not in your code: the exercise is not graded "
        "(incomplete, not 0 points). Check it again; if it fails again, report it with:\n"
        + "".join(frames).rstrip()
    )
    return CheckResult("check module", passed=False, max_points=exercise.points, message=message)


def _process_failure(exercise: manifest_module.Exercise, reason: str, log_tail: str) -> CheckResult:
    message = f"The check process for {exercise.name} failed: {reason}." + log_lines(log_tail)
    return CheckResult("check process", passed=False, max_points=exercise.points, message=message)


__all__ = ["IMPLEMENTATIONS", "ExerciseReport", "JournalStatus", "UnknownExercise",
           "check_exercise", "journal_status"]  # fmt: skip
