"""Does the grader's fast schema check give jsonschema's verdict on every kind of report?

``learning.grade.schema`` accepts a report only when the compiled validator does; anything it
rejects goes to ``learning.report.schema_problems``. The danger is one direction: a report the
compiled validator accepts and jsonschema rejects would slip through. Each broken report below
breaks one rule of the schema; both must reject it, and both accept every genuine report.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from learning.grade.schema import fast_valid, report_schema_problems
from learning.report import schema_problems

pytest.importorskip("fastjsonschema")
REPO = Path(__file__).resolve().parents[2]
GENUINE = json.loads((REPO / "results" / "h200" / "all.json").read_text())


def _variant(report: dict) -> dict:
    return report["cases"][0]["variants"][0]


BREAKS = {
    "a missing top-level field": lambda r: r.pop("settings"),
    "complete as a string": lambda r: r.update(complete="yes"),
    "an unknown impl": lambda r: r["settings"].update(impl="mine"),
    "a hash that is not hex": lambda r: r["fingerprint"]["files"].update({"x.py": "z" * 64}),
    "an empty fingerprint": lambda r: r["fingerprint"].update(files={}),
    "samples as strings": lambda r: _variant(r).update(samples_ms=["1.0"]),
    "a variant without status": lambda r: _variant(r).pop("status"),
    "an unknown status": lambda r: _variant(r).update(status="great"),
    "a case without variants": lambda r: r["cases"][0].pop("variants"),
    "logical_bytes as a float string": lambda r: r["cases"][0].update(logical_bytes="1e9"),
    "cases as an object": lambda r: r.update(cases={}),
    "a correctness record without passed": lambda r: _variant(r)["correctness"].pop("passed"),
}


@pytest.mark.parametrize("name", BREAKS)
def test_both_reject_a_broken_report(name):
    report = copy.deepcopy(GENUINE)
    BREAKS[name](report)
    assert schema_problems(report), f"jsonschema accepts {name}: the break breaks nothing"
    assert not fast_valid(report)
    assert report_schema_problems(report) == schema_problems(report)


def test_both_accept_every_genuine_report():
    for path in sorted((REPO / "results" / "h200").glob("*.json")):
        report = json.loads(path.read_text())
        if isinstance(report, dict) and report.get("schema_version") == 2:
            assert schema_problems(report) == [], path.name
            assert fast_valid(report), path.name


def test_another_schema_version_is_never_fast_valid():
    assert not fast_valid({**GENUINE, "schema_version": 3})
    assert report_schema_problems({**GENUINE, "schema_version": 3})[0].startswith(
        "unsupported schema_version 3"
    )
