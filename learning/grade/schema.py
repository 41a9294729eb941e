"""The report schema, checked fast: a compiled validator first, ``jsonschema`` for the words.

``learning.report.schema_problems`` (``jsonschema``) takes about 6 ms for a small report, the
largest cost of grading a class. ``fastjsonschema`` (installed with the course's notebook
tools) compiles the same schema to Python once and checks a valid report in a fraction of
that. It only decides the common case, a valid report: whenever it finds a problem, or is not
installed, the report goes to ``schema_problems``, whose messages (and verdict) are the ones
the grader reports. ``tests/grading/test_schema_fast_path.py`` holds the two to the same
verdict on valid and broken reports.
"""

from __future__ import annotations

import copy
from functools import lru_cache

from learning.report import schema_problems
from learning.report.validate import SCHEMA_VERSION, load_schema


@lru_cache(maxsize=1)
def _compiled():
    """The compiled validator, or None without fastjsonschema (or for a schema it rejects)."""
    try:
        import fastjsonschema
    except ImportError:
        return None
    schema = copy.deepcopy(load_schema())
    # Every keyword the schema uses means the same in draft 7, which fastjsonschema knows.
    schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    try:
        return fastjsonschema.compile(schema), fastjsonschema.JsonSchemaException
    except Exception:
        return None


def fast_valid(report: object) -> bool:
    """True when the compiled validator accepts ``report`` (False when it is not installed)."""
    compiled = _compiled()
    if compiled is None or not isinstance(report, dict):
        return False
    validate, rejected = compiled
    if report.get("schema_version") != SCHEMA_VERSION:
        return False
    try:
        validate(report)
    except rejected:
        return False
    except (RecursionError, ValueError, TypeError):
        return False
    return True


def report_schema_problems(report: object) -> list[str]:
    """``learning.report.schema_problems(report)``, answered fast for a valid report."""
    return [] if fast_valid(report) else schema_problems(report)
