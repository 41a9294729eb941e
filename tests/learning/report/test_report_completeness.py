"""Does validation refuse what a consistent report cannot hold: a field the engine never writes,
a case twice, a number that is not finite, a file too large or too deeply nested to be read?
Each in one line, and ``python -m learning.report validate`` exits 2."""

from __future__ import annotations

import copy
import json
import re

import pytest

from learning.report import __main__ as report_cli
from learning.report import validate, validate_file
from learning.report.validate import MAX_NESTING, MAX_REPORT_BYTES


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """A real CPU report of the reference softmax (two cases, torch and triton)."""
    from learning.bench import BenchConfig, run

    output = tmp_path_factory.mktemp("cpu") / "softmax-cpu.json"
    run(BenchConfig(op="softmax", output=output, shapes=((4, 8), (3, 5)), dtype="float32",
                    samples=6, visits=2, device="cpu", quiet=True))  # fmt: skip
    recorded = json.loads(output.read_text())
    assert validate(recorded) == []
    return recorded


def _altered(report: dict, change) -> dict:
    altered = copy.deepcopy(report)
    change(altered)
    return altered


def _one_line_and_exit_2(path, capsys) -> str:
    capsys.readouterr()
    assert report_cli.main(["validate", str(path)]) == 2
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith(f"{path}: "), out
    return out[0].removeprefix(f"{path}: ")


UNKNOWN = {
    "top level": lambda r: r.update(verified_by="hand"),
    "settings": lambda r: r["settings"].update(calibrated=True),
    "environment": lambda r: r["environment"].update(gpu_clock_mhz=1980),
    "case": lambda r: r["cases"][0].update(note="fast"),
    "variant": lambda r: r["cases"][0]["variants"][1].update(trusted=True),
    "correctness": lambda r: r["cases"][0]["variants"][1]["correctness"].update(exact=True),
    "numerics_policy": lambda r: r["numerics_policy"].update(anything={}),
    "fingerprint": lambda r: r["fingerprint"].update(signed="yes"),
}


@pytest.mark.parametrize("where", UNKNOWN)
def test_a_field_the_engine_never_writes_is_invalid(where, report, tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_altered(report, UNKNOWN[where])))
    said = _one_line_and_exit_2(path, capsys)
    assert said.startswith("schema: ") and "Additional properties are not allowed" in said


def test_a_case_twice_is_invalid(report, tmp_path, capsys):
    twice = _altered(report, lambda r: r["cases"].append(copy.deepcopy(r["cases"][0])))
    label = f"softmax {'x'.join(map(str, report['cases'][0]['shape']))} float32"
    assert validate(twice) == [f"{label}: the case appears twice"]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(twice))
    assert _one_line_and_exit_2(path, capsys) == f"{label}: the case appears twice"


def test_a_number_that_is_not_finite_is_invalid(report, tmp_path, capsys):
    def nan_error(r):
        correctness = r["cases"][0]["variants"][1]["correctness"]
        assert correctness["passed"] is True
        correctness["max_abs_error"] = float("nan")

    where = "cases/0/variants/1/correctness/max_abs_error"
    assert validate(_altered(report, nan_error)) == [f"{where}: nan is not a finite number"]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_altered(report, nan_error)))  # Python writes NaN; JSON has none
    assert _one_line_and_exit_2(path, capsys) == "not JSON (NaN is not a JSON number)"
    text, count = re.subn(r'"max_abs_error": [-0-9.e]+', '"max_abs_error": 1e999',
                          json.dumps(report), count=1)  # fmt: skip
    assert count == 1
    path.write_text(text)  # a JSON number that no float holds: infinity
    said = _one_line_and_exit_2(path, capsys)
    assert said.endswith("/max_abs_error: inf is not a finite number")


def test_a_key_twice_in_one_object_is_invalid(report, tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report).replace('"complete": true', '"complete": false, '
                                               '"complete": true', 1))  # fmt: skip
    assert _one_line_and_exit_2(path, capsys) == (
        "not JSON (the key 'complete' appears twice in one object)"
    )


def test_a_file_over_the_size_limit_is_not_read(report, tmp_path, capsys):
    """Schema-valid padding: a report with a warning that makes it MAX_REPORT_BYTES + 1."""
    padded = _altered(report, lambda r: r["warnings"].append(""))
    spare = MAX_REPORT_BYTES + 1 - len(json.dumps(padded).encode())
    padded["warnings"][-1] = "x" * spare
    path = tmp_path / "r.json"
    path.write_text(json.dumps(padded))
    assert path.stat().st_size == MAX_REPORT_BYTES + 1
    assert _one_line_and_exit_2(path, capsys) == (
        f"larger than {MAX_REPORT_BYTES / 1e6:g} MB (MAX_REPORT_BYTES): not read as a report"
    )


def _nested_to(report: dict, depth: int) -> dict:
    """A copy that nests ``depth`` levels: lists inside numerics_policy (itself at level 2)."""
    levels = depth - 2
    lists = json.loads("[" * levels + "]" * levels)
    return _altered(report, lambda r: r["numerics_policy"].update(matmul_allow_tf32=lists))


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 100_000])
def test_nesting_beyond_the_limit_is_invalid(depth, report, tmp_path, capsys):
    """Inside an object the schema leaves open to values (numerics_policy's), or a file that is
    nothing but brackets: one line either way, never a RecursionError."""
    path = tmp_path / "r.json"
    if depth < 1000:
        path.write_text(json.dumps(_nested_to(report, depth)))
    else:
        path.write_text("[" * depth + "]" * depth)
    said = _one_line_and_exit_2(path, capsys)
    assert said.startswith(f"nested deeper than {MAX_NESTING} levels (MAX_NESTING)")


def test_nesting_at_the_limit_is_read(report):
    """The limit is the deepest a file may nest: at it, the schema decides (here: a list
    where a boolean belongs)."""
    problems = validate(_nested_to(report, MAX_NESTING))
    where = "schema: numerics_policy/matmul_allow_tf32"
    assert problems and all(problem.startswith(where) for problem in problems)


@pytest.mark.parametrize("what", ["missing", "folder", "not UTF-8", "not JSON", "a number"])
def test_a_file_that_is_no_report_is_one_line(what, tmp_path, capsys):
    path = tmp_path / "r.json"
    if what == "folder":
        path.mkdir()
    elif what == "not UTF-8":
        path.write_bytes(b'{"schema_version": 2, "timing_note": "\xff"}')
    elif what == "not JSON":
        path.write_text('{"schema_version": 2, "cases": [')
    elif what == "a number":  # JSON, and no container for the depth walk to enter
        path.write_text("5")
    said = _one_line_and_exit_2(path, capsys)
    assert said == {"missing": "no such file", "folder": "a folder, not a report",
                    "not UTF-8": "not UTF-8 text, so not JSON",
                    "not JSON": "not JSON (Expecting value, line 1)",
                    "a number": "a report is a JSON object, got int"}[what]  # fmt: skip
    assert validate_file(path) == [said]
