"""Grading a class: ``python -m learning.grade SUBMISSIONS_DIR --output grades.csv``.

An instructor must be able to trust two things: that a learner's kernel is correct, and that a
learner's report describes the code that was submitted. So the grader re-runs every graded
exercise's checks on the submitted files (:func:`check_submission`), and validates every report
against the submitted files, the instructor's release and the rest of the class
(:func:`validate_reports`). :func:`grade_submissions` does both and adds up the points; the
command line (``learning.grade.cli``) only parses arguments and writes the results.
"""

from learning.grade.checks import check_submission, describe, summary
from learning.grade.findings import FIXES, Finding
from learning.grade.grades import (
    REPORT_POINTS,
    GradeInputError,
    LearnerGrade,
    ReportVerdict,
    find_submissions,
    grade_submissions,
    graded_exercises,
    load_release,
    validate_reports,
)
from learning.grade.output import CSV_COLUMNS, feedback, write_csv, write_feedback, write_gradebook

__all__ = [
    "CSV_COLUMNS",
    "FIXES",
    "REPORT_POINTS",
    "Finding",
    "GradeInputError",
    "LearnerGrade",
    "ReportVerdict",
    "check_submission",
    "describe",
    "feedback",
    "find_submissions",
    "grade_submissions",
    "graded_exercises",
    "load_release",
    "summary",
    "validate_reports",
    "write_csv",
    "write_feedback",
    "write_gradebook",
]
