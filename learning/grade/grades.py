"""Grading a class: every learner's checks re-run, every report validated, points added up.

The order is the pipeline (each step is one call below, in :func:`grade_submissions`):

1. find the learners: each folder of ``SUBMISSIONS_DIR`` not starting with a dot, and each
   hand-in archive (``alice.zip``, ``alice.tar.gz``: :mod:`learning.grade.archive`), unpacked
   into a temporary folder;
2. index every learner's submitted files (for the copying check, which needs the whole class);
3. per learner: validate each ``reports/*.json`` (:mod:`learning.grade.reports`), then re-run
   the checks of each graded exercise on the submitted files (:mod:`learning.grade.checks`);
4. with ``retime``, re-time each learner's reports on this machine (:mod:`learning.grade.retime`)
   and add what the instructor's own run shows to each report's findings;
5. points: each exercise's checker points, plus :data:`REPORT_POINTS` times the share of the
   learner's reports that are trusted (no failing finding; review flags do not cost points). A
   report whose learner kernel failed its oracle check or was not timed is not trusted.

The checks use the instructor's ``seed`` when one is given, so a grade can be replayed.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from learning import manifest as manifest_module
from learning.check import forkserver
from learning.check.runner import ExerciseReport
from learning.grade.archive import ArchiveError, archive_learner, unpack
from learning.grade.checks import check_submission
from learning.grade.findings import Finding
from learning.grade.reports import (
    ClassIndex,
    Release,
    Submission,
    bench_command,
    load_report,
    validate_report,
)
from learning.grade.retime import RetimeOptions, retime_reports
from learning.report import REPO_ROOT

REPORT_POINTS = 10.0


class GradeInputError(ValueError):
    """Input the grader cannot work with; the message is the one line the command prints."""


@dataclass(frozen=True)
class ReportVerdict:
    path: str  # relative to the learner's folder, e.g. reports/softmax.json
    findings: tuple[Finding, ...]
    rerun: str | None = None  # the kernel-bench command that measures it again on a GPU
    data: dict | None = field(default=None, repr=False, compare=False)  # the report, if read

    @property
    def failures(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if not f.review)

    @property
    def reviews(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.review)

    @property
    def trusted(self) -> bool:
        return not self.failures


NAMED_FAILURES = 3  # failed checks an exercise's reason names in the CSV; the feedback has all


@dataclass(frozen=True)
class LearnerGrade:
    learner: str
    checks: tuple[ExerciseReport, ...]
    reports: tuple[ReportVerdict, ...]
    report_max: float
    problems: tuple[Finding, ...] = ()  # about the submission itself (an archive that failed)

    @property
    def incomplete(self) -> tuple[str, ...]:
        """The exercises not graded: their check module failed twice (a fault of the checker,
        so a grade to run again, never 0 points to keep)."""
        return tuple(report.exercise for report in self.checks if report.incomplete)

    @property
    def status(self) -> str:
        return "incomplete" if self.incomplete else "graded"

    @property
    def check_points(self) -> float:
        return round(sum(report.points for report in self.checks), 2)

    @property
    def check_max(self) -> float:
        return sum(report.max_points for report in self.checks)

    @property
    def report_points(self) -> float:
        if not self.reports:
            return 0.0
        trusted = sum(verdict.trusted for verdict in self.reports)
        return round(self.report_max * trusted / len(self.reports), 2)

    @property
    def points(self) -> float:
        return round(self.check_points + self.report_points, 2)

    @property
    def max_points(self) -> float:
        return self.check_max + self.report_max

    def reasons(self) -> list[str]:
        """Why points were lost, one line each: failed checks, then failing report findings."""
        lines = [str(finding) for finding in self.problems if not finding.review]
        for report in self.checks:
            failed = [check.name for check in report.checks if not check.passed]
            if report.incomplete:
                lines.append(f"[not-graded] {report.exercise}: the checker failed twice on it, "
                             "a fault of the checks and not of the submission: grade it again")
            elif len(failed) > NAMED_FAILURES:  # the CSV cell stays short: the feedback file
                lines.append(  # has every check with its message
                    f"[check] {report.exercise}: failed {len(failed)} of {len(report.checks)} "
                    f"checks, {', '.join(failed[:NAMED_FAILURES])} first (the feedback file "
                    "has them all)"
                )
            elif failed:
                lines.append(f"[check] {report.exercise}: failed {', '.join(failed)}")
        if self.report_max and not self.reports:
            lines.append("[no-reports] no reports/*.json in the submission")
        for verdict in self.reports:
            lines += [f"{verdict.path}: {finding}" for finding in verdict.failures]
        return lines

    def review_flags(self) -> list[str]:
        flags = [str(finding) for finding in self.problems if finding.review]
        return flags + [f"{v.path}: {finding}" for v in self.reports for finding in v.reviews]


def load_release(release_root: Path | str | None = None) -> Release:
    """The instructor's release: a course checkout (the running one when None)."""
    root = Path(release_root) if release_root is not None else REPO_ROOT
    if not (root / "learning").is_dir():
        raise GradeInputError(f"{root}: not a course release (it has no learning/ folder)")
    manifest_path = root / "course_manifest.toml"
    try:
        manifest = manifest_module.load(
            manifest_path if manifest_path.is_file() else manifest_module.MANIFEST_PATH
        )
    except manifest_module.ManifestError as error:
        raise GradeInputError(f"{manifest_path}: {error}") from None
    return Release(root=root.resolve(), manifest=manifest)


def find_submissions(submissions_dir: Path | str) -> list[Submission]:
    """Every learner folder and hand-in archive in ``submissions_dir`` (archives not unpacked:
    :func:`unpack_submissions` does that)."""
    folder = Path(submissions_dir)
    if not folder.is_dir():
        raise GradeInputError(f"{folder}: no such folder of submissions")
    found: dict[str, Submission] = {}
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            learner, archive = entry.name, None
        elif entry.is_file() and archive_learner(entry):
            learner, archive = archive_learner(entry), entry
        else:
            continue
        if learner in found:
            raise GradeInputError(
                f"{folder}: learner {learner!r} handed in twice ({found[learner].folder.name} "
                f"and {entry.name}); keep one"
            )
        found[learner] = Submission(learner=learner, folder=entry, archive=archive)
    return sorted(found.values(), key=lambda submission: submission.learner)


def unpack_submissions(submissions: Sequence[Submission], scratch: Path) -> list[Submission]:
    """Archives unpacked under ``scratch`` (one folder per learner); folders as they are."""
    unpacked = []
    for submission in submissions:
        if submission.archive is None:
            unpacked.append(submission)
            continue
        target = scratch / submission.learner
        try:
            problems = unpack(submission.archive, target)
        except ArchiveError as error:
            target.mkdir(parents=True, exist_ok=True)
            problems = [Finding("archive", f"{submission.archive.name}: {error}")]
        unpacked.append(replace(submission, folder=target, problems=tuple(problems)))
    return unpacked


def graded_exercises(manifest: manifest_module.Manifest) -> tuple[str, ...]:
    """The exercises of the lessons the manifest lists: the course as released so far."""
    return tuple(name for lesson in manifest.lessons.values() for name in lesson.exercises)


def validate_reports(
    submissions: Sequence[Submission], release: Release
) -> dict[str, tuple[ReportVerdict, ...]]:
    """Every learner's report verdicts; what ``scripts/grade_benchmark.py`` times."""
    index = ClassIndex(release, submissions)
    verdicts = {}
    for submission in submissions:
        verdicts[submission.learner] = tuple(
            _verdict(path, submission, release, index) for path in submission.reports()
        )
    return verdicts


def _verdict(
    path: Path, submission: Submission, release: Release, index: ClassIndex
) -> ReportVerdict:
    shown = path.relative_to(submission.folder).as_posix()
    report, findings = load_report(path)
    rerun = None
    if not findings:
        try:
            findings = validate_report(report, submission, release, index)
            if not any(finding.code == "schema" for finding in findings):
                rerun = bench_command(report)
        except Exception as error:  # one report never stops the class (RecursionError too)
            findings = [
                Finding(
                    "grader-error",
                    f"the grader could not check it ({type(error).__name__}: {error})"[:300],
                )
            ]
    data = report if isinstance(report, dict) and rerun is not None else None
    return ReportVerdict(shown, tuple(findings), rerun, data)


def grade_submissions(
    submissions_dir: Path | str,
    *,
    release_root: Path | str | None = None,
    exercises: Sequence[str] | None = None,
    report_points: float = REPORT_POINTS,
    progress: Callable[[str], None] | None = None,
    seed: int | None = None,
    retime: RetimeOptions | None = None,
) -> list[LearnerGrade]:
    """Grade every learner under ``submissions_dir``; one :class:`LearnerGrade` each.

    ``seed``: the instructor's seed for every check (None: the checker draws fresh ones);
    ``retime``: re-time each learner's reports on this machine with these options.
    """
    release = load_release(release_root)
    found = find_submissions(submissions_dir)
    names = tuple(exercises) if exercises is not None else graded_exercises(release.manifest)
    unknown = [name for name in names if name not in release.manifest.exercises]
    if unknown:
        raise GradeInputError(
            f"unknown exercise {unknown[0]!r}; choose from {', '.join(release.manifest.exercises)}"
        )
    with tempfile.TemporaryDirectory(prefix="learning-grade-handins-") as scratch:
        submissions = unpack_submissions(found, Path(scratch))
        verdicts = validate_reports(submissions, release)
        grades = []
        for submission in submissions:
            reports = verdicts[submission.learner]
            if retime is not None:
                if progress:
                    progress(f"re-timing {submission.learner}'s reports")
                reports = retime_reports(submission, reports, release, retime)
            if progress:
                progress(f"grading {submission.learner}: {', '.join(names) or 'no exercises'}")
            try:
                checks = tuple(
                    check_submission(name, submission.folder, manifest=release.manifest,
                                     seed=seed)  # fmt: skip
                    for name in names
                )
            finally:
                # No two learners' check processes come from one process server: each
                # learner's are forked from a server that no other learner's code ran beside.
                forkserver.close_all()
            grades.append(
                LearnerGrade(
                    submission.learner, checks, reports, report_points, submission.problems
                )
            )
    return grades
