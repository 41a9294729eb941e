"""Grading a class: every learner's checks re-run, every report validated, points added up.

The order is the pipeline (each step is one call below, in :func:`grade_submissions`):

1. find the learners: each folder of ``SUBMISSIONS_DIR`` not starting with a dot;
2. index every learner's submitted files (for the copying check, which needs the whole class);
3. per learner: validate each ``reports/*.json`` (:mod:`learning.grade.reports`), then re-run
   the checks of each graded exercise on the submitted files (:mod:`learning.grade.checks`);
4. points: each exercise's checker points, plus :data:`REPORT_POINTS` times the share of the
   learner's reports that are trusted (no failing finding; review flags do not cost points).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from learning import manifest as manifest_module
from learning.check.runner import ExerciseReport
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
from learning.report import REPO_ROOT

REPORT_POINTS = 10.0


class GradeInputError(ValueError):
    """Input the grader cannot work with; the message is the one line the command prints."""


@dataclass(frozen=True)
class ReportVerdict:
    path: str  # relative to the learner's folder, e.g. reports/softmax.json
    findings: tuple[Finding, ...]
    rerun: str | None = None  # the kernel-bench command that measures it again on a GPU

    @property
    def failures(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if not f.review)

    @property
    def reviews(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.review)

    @property
    def trusted(self) -> bool:
        return not self.failures


@dataclass(frozen=True)
class LearnerGrade:
    learner: str
    checks: tuple[ExerciseReport, ...]
    reports: tuple[ReportVerdict, ...]
    report_max: float

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
        lines = []
        for report in self.checks:
            failed = [check.name for check in report.checks if not check.passed]
            if failed:
                lines.append(f"[check] {report.exercise}: failed {', '.join(failed)}")
        if self.report_max and not self.reports:
            lines.append("[no-reports] no reports/*.json in the submission")
        for verdict in self.reports:
            lines += [f"{verdict.path}: {finding}" for finding in verdict.failures]
        return lines

    def review_flags(self) -> list[str]:
        return [f"{v.path}: {finding}" for v in self.reports for finding in v.reviews]


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
    folder = Path(submissions_dir)
    if not folder.is_dir():
        raise GradeInputError(f"{folder}: no such folder of submissions")
    return [
        Submission(learner=entry.name, folder=entry)
        for entry in sorted(folder.iterdir())
        if entry.is_dir() and not entry.name.startswith(".")
    ]


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
    report, findings = load_report(path)
    if not findings:
        findings = validate_report(report, submission, release, index)
    shown = path.relative_to(submission.folder).as_posix()
    readable = not any(finding.code in ("unreadable", "schema") for finding in findings)
    return ReportVerdict(shown, tuple(findings), bench_command(report) if readable else None)


def grade_submissions(
    submissions_dir: Path | str,
    *,
    release_root: Path | str | None = None,
    exercises: Sequence[str] | None = None,
    report_points: float = REPORT_POINTS,
    progress: Callable[[str], None] | None = None,
) -> list[LearnerGrade]:
    """Grade every learner under ``submissions_dir``; one :class:`LearnerGrade` each."""
    release = load_release(release_root)
    submissions = find_submissions(submissions_dir)
    names = tuple(exercises) if exercises is not None else graded_exercises(release.manifest)
    unknown = [name for name in names if name not in release.manifest.exercises]
    if unknown:
        raise GradeInputError(
            f"unknown exercise {unknown[0]!r}; choose from {', '.join(release.manifest.exercises)}"
        )
    verdicts = validate_reports(submissions, release)
    grades = []
    for submission in submissions:
        if progress:
            progress(f"grading {submission.learner}: {', '.join(names) or 'no exercises'}")
        checks = tuple(check_submission(name, submission.folder) for name in names)
        grades.append(
            LearnerGrade(submission.learner, checks, verdicts[submission.learner], report_points)
        )
    return grades
