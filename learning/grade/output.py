"""What the grader writes: the class CSV, one feedback file per learner, the nbgrader gradebook.

CSV columns (one row per learner, in learner order):

==================  =====================================================================
learner             the submission folder's name
status              ``graded``, or ``incomplete`` when some exercise's check module failed
                    twice (a fault of the checker): that exercise is not graded, its reason
                    says ``[not-graded]``, and the grader exits with status 3
points, max_points  the total: check points + report points
check_points        points from the exercise checks the instructor re-ran on the
check_max           submitted files (what each exercise is worth comes from the manifest)
report_points       ``report_max`` times the share of the learner's reports that are trusted
report_max          (0 points when the submission has no report)
reports             how many ``reports/*.json`` the submission holds
reports_trusted     how many of them have no failing finding
needs_review        ``yes`` when anything is flagged for a person (plausibility, copying
                    between identical submissions, an unreadable GPU utilization)
reasons             why points were lost, ``" | "`` between reasons, each ``[code] ...``; an
                    exercise with many failed checks counts them and names the first few
                    (the feedback file has every check and its message)
review              what is flagged for review, same format; it costs no points
==================  =====================================================================
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import sys
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path

from learning.grade.findings import FIXES
from learning.grade.grades import LearnerGrade

CSV_COLUMNS = (
    "learner",
    "status",
    "points",
    "max_points",
    "check_points",
    "check_max",
    "report_points",
    "report_max",
    "reports",
    "reports_trusted",
    "needs_review",
    "reasons",
    "review",
)
GRADEBOOK_ASSIGNMENT = "learning-grade"  # the assignment the grader's scores appear under
GRADEBOOK_NOTEBOOK = "grade"
COURSE_ID = "kernel-workshop"  # course/nbgrader_config.py uses the same


def _number(value: float) -> str:
    return f"{value:g}"


def csv_rows(grades: Sequence[LearnerGrade]) -> list[dict[str, str]]:
    return [
        {
            "learner": grade.learner,
            "status": grade.status,
            "points": _number(grade.points),
            "max_points": _number(grade.max_points),
            "check_points": _number(grade.check_points),
            "check_max": _number(grade.check_max),
            "report_points": _number(grade.report_points),
            "report_max": _number(grade.report_max),
            "reports": str(len(grade.reports)),
            "reports_trusted": str(sum(v.trusted for v in grade.reports)),
            "needs_review": "yes" if grade.review_flags() else "no",
            "reasons": " | ".join(grade.reasons()),
            "review": " | ".join(grade.review_flags()),
        }
        for grade in grades
    ]


def write_atomic_text(path: Path, text: str) -> None:
    """Write ``text`` all at once: a temporary file in the same folder, then a rename."""
    path = Path(path)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_csv(grades: Sequence[LearnerGrade], path: Path) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(csv_rows(grades))
    write_atomic_text(path, buffer.getvalue())


# --------------------------------------------------------------------------- feedback


def feedback_name(learner: str) -> str:
    """A file name for the learner's feedback that cannot leave the feedback folder."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", learner).lstrip(".") + ".md"


def _fenced(text: str) -> list[str]:
    return ["", "```text", *text.rstrip().splitlines(), "```", ""]


def feedback(grade: LearnerGrade) -> str:
    """The learner's feedback as markdown: every check, every report finding, what to fix."""
    trusted = sum(v.trusted for v in grade.reports)
    lines = [
        f"# {grade.learner}: {_number(grade.points)} / {_number(grade.max_points)} points",
        "",
    ]
    if grade.incomplete:
        lines += [
            f"**Incomplete:** {', '.join(grade.incomplete)} could not be graded: the checker "
            "failed on it twice, a fault of the checks and not of your files. It is graded "
            "again; the points here do not count it yet.",
            "",
        ]
    lines += [
        "| part | points |",
        "|---|---|",
        f"| exercise checks, re-run on your submitted files | "
        f"{_number(grade.check_points)} / {_number(grade.check_max)} |",
        f"| reports ({trusted} of {len(grade.reports)} trusted) | "
        f"{_number(grade.report_points)} / {_number(grade.report_max)} |",
        "",
        "## Checks",
        "",
    ]
    if not grade.checks:
        lines += ["No exercise was graded.", ""]
    for report in grade.checks:
        lines += [
            f"### {report.exercise}: {_number(report.points)} / {_number(report.max_points)}",
            "",
        ]
        for check in report.checks:
            mark = "PASS" if check.passed else "FAIL"
            worth = f"{_number(check.earned)}/{_number(check.max_points)}"
            lines.append(f"- {mark} {check.name} ({worth})")
            if not check.passed and check.message:
                lines += _fenced(check.message)
        lines.append("")
    lines += ["## Reports", ""]
    if not grade.reports:
        lines += [f"No reports/*.json in the submission. To fix: {FIXES['no-reports']}.", ""]
    for verdict in grade.reports:
        state = "trusted" if verdict.trusted else "NOT trusted"
        lines += [f"### {verdict.path}: {state}", ""]
        for finding in verdict.failures:
            lines.append(f"- {finding}")
        for finding in verdict.reviews:
            lines.append(f"- flagged for review, no points lost: {finding}")
        if not verdict.findings:
            lines.append("- nothing found: schema, fingerprints, figures and environment all agree")
        if verdict.rerun:
            lines.append(f"- re-run on a GPU, in a clone holding these files: `{verdict.rerun}`")
        lines.append("")
    fixes = _fixes(grade)
    if fixes:
        lines += ["## What to fix", "", *(f"- {fix}" for fix in fixes), ""]
    return "\n".join(lines)


def _fixes(grade: LearnerGrade) -> list[str]:
    codes = []
    graded = [report for report in grade.checks if not report.incomplete]
    if any(not check.passed for report in graded for check in report.checks):
        codes.append("check")
    if grade.incomplete:
        codes.append("not-graded")
    if grade.report_max and not grade.reports:
        codes.append("no-reports")
    codes += [f.code for v in grade.reports for f in v.failures]
    seen: dict[str, None] = {}
    for code in codes:
        seen.setdefault(code)
    return [f"[{code}] {FIXES[code]}" for code in seen if code in FIXES]


def write_feedback(grades: Sequence[LearnerGrade], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for grade in grades:
        write_atomic_text(folder / feedback_name(grade.learner), feedback(grade))


# --------------------------------------------------------------------------- gradebook


def _alembic_on_path() -> None:
    """Put this interpreter's scripts folder on PATH when ``alembic`` is not found otherwise
    (a virtual environment used without activating it)."""
    scripts = str(Path(sys.executable).parent)
    if shutil.which("alembic") is None and shutil.which("alembic", path=scripts):
        os.environ["PATH"] = os.pathsep.join([scripts, os.environ.get("PATH", "")])


def write_gradebook(
    grades: Sequence[LearnerGrade], database: Path, course_id: str = COURSE_ID
) -> None:
    """Record each learner's scores in an nbgrader gradebook (SQLite), beside autograde's.

    The scores go to their own assignment, :data:`GRADEBOOK_ASSIGNMENT`, with one notebook and
    two grade cells, ``checks`` and ``reports``, so ``nbgrader export`` lists them as a column
    of their own and re-running ``nbgrader generate_assignment`` never removes them. Running
    the grader again updates the same rows. An incomplete grade is not recorded: a score
    without the exercise the checker could not grade would read as that exercise's 0.
    """
    from nbgrader.api import Gradebook

    _alembic_on_path()  # nbgrader runs the `alembic` command to create a new gradebook
    parts = {
        "checks": max((g.check_max for g in grades), default=0.0),
        "reports": max((g.report_max for g in grades), default=0.0),
    }
    with Gradebook(f"sqlite:///{Path(database).resolve()}", course_id=course_id) as gradebook:
        _record(gradebook, grades, parts)


def _record(gradebook, grades: Sequence[LearnerGrade], parts: dict[str, float]) -> None:
    assignment, notebook = GRADEBOOK_ASSIGNMENT, GRADEBOOK_NOTEBOOK
    with warnings.catch_warnings():
        # nbgrader's add_submission builds its rows in an order SQLAlchemy warns about; the
        # rows are right (the tests read them back), the warning is nbgrader's own.
        warnings.filterwarnings("ignore", message=".*not in session.*")
        gradebook.update_or_create_assignment(assignment)
        gradebook.update_or_create_notebook(notebook, assignment)
        for cell, max_score in parts.items():
            gradebook.update_or_create_grade_cell(
                cell, notebook, assignment, max_score=max_score, cell_type="code"
            )
        for grade in (g for g in grades if not g.incomplete):
            gradebook.update_or_create_student(grade.learner)
            gradebook.update_or_create_submission(assignment, grade.learner)
            scores = {"checks": grade.check_points, "reports": grade.report_points}
            for cell, score in scores.items():
                gradebook.find_grade(cell, notebook, assignment, grade.learner).auto_score = score
            gradebook.db.commit()
