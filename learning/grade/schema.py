"""The report schema, checked fast: a compiled validator first, ``jsonschema`` for the words.

The compiled check lives in :mod:`learning.report.validate` (``fast_valid``), so every reader
of reports gets it; this module keeps the grader's names.

``learning.report.schema_problems`` (``jsonschema``) takes about 6 ms for a small report, the
largest cost of grading a class. ``fastjsonschema`` (installed with the course's notebook
tools) compiles the same schema to Python once and checks a valid report in a fraction of
that. It only decides the common case, a valid report: whenever it finds a problem, or is not
installed, the report goes to ``schema_problems``, whose messages (and verdict) are the ones
the grader reports. ``tests/grading/test_schema_fast_path.py`` holds the two to the same
verdict on valid and broken reports.
"""

from __future__ import annotations

from learning.report import schema_problems
from learning.report.validate import fast_valid

__all__ = ["fast_valid", "report_schema_problems"]


def report_schema_problems(report: object) -> list[str]:
    """``learning.report.schema_problems(report)``, answered fast for a valid report (the
    compiled check is now part of it; kept for the grader's callers)."""
    return schema_problems(report)
