"""Do the measurement scripts write their --output as script records (learning.report)? (CPU)

The GPU-only scripts cannot measure here; what they share is tested instead: the writer in
scripts/_records.py, which every script's --output goes through (the timing scripts through
scripts/_gpu_timing.py's ``write_json``). scripts/validate_kernels.py runs on a CPU and is run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import warm_python

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import _gpu_timing  # noqa: E402  (imports learning first: it selects the backend)
import _records  # noqa: E402

from learning.report import is_record, load_data, validate, validate_file  # noqa: E402

SCRIPTS = ROOT / "scripts"


def _record(path: Path) -> dict:
    record = json.loads(path.read_text())
    assert is_record(record), f"{path} is not a script record"
    return record


def test_output_is_a_record_of_the_script_with_its_data_unchanged(tmp_path: Path, capsys):
    """Is the payload the record's data (as JSON would have it), fingerprinted with the script?"""
    output = tmp_path / "deeper" / "tune.json"  # the folder is created
    payload = {"args": {"output": output, "sections": ("a", "b")}, "rows": [{"ms": 0.5}]}
    _gpu_timing.write_json(
        str(output), payload, script=str(SCRIPTS / "tune_gemm.py"), argv=["--output", "x"]
    )
    assert capsys.readouterr().out.strip() == f"wrote {output}"
    record = _record(output)
    assert record["script"] == "scripts/tune_gemm.py" and record["argv"] == ["--output", "x"]
    files = record["fingerprint"]["files"]
    for name in ("scripts/tune_gemm.py", "scripts/_gpu_timing.py", "scripts/_records.py"):
        assert name in files, f"{name} missing from {sorted(files)}"
    assert record["data"] == {
        "args": {"output": str(output), "sections": ["a", "b"]},
        "rows": [{"ms": 0.5}],
    }
    assert load_data(output) == record["data"]
    assert validate(record) == []


def test_no_output_path_writes_nothing(tmp_path: Path, capsys):
    _gpu_timing.write_json(None, {"rows": []}, script=str(SCRIPTS / "tune_gemm.py"))
    _gpu_timing.write_json("", {"rows": []}, script=str(SCRIPTS / "tune_gemm.py"))
    assert capsys.readouterr().out == "" and list(tmp_path.iterdir()) == []


def test_non_finite_numbers_are_recorded_as_null(tmp_path: Path):
    """JSON has no NaN or Infinity: does a non-finite timing become null, not an invalid file?"""
    output = tmp_path / "out.json"
    data = {"ms": [1.0, float("nan"), float("inf")], "nested": ({"ratio": float("-inf")},)}
    _records.write_output(output, SCRIPTS / "row_plan_grid.py", data, argv=[], say=lambda _: None)
    assert load_data(output) == {"ms": [1.0, None, None], "nested": [{"ratio": None}]}
    assert "NaN" not in output.read_text() and "Infinity" not in output.read_text()


def test_a_new_record_replaces_an_old_file_whole(tmp_path: Path):
    """Is an existing output replaced by the complete new record, with no temporary left?"""
    output = tmp_path / "out.json"
    output.write_text('{"old": true}\n')
    _records.write_output(output, SCRIPTS / "row_plan_grid.py", {"new": 1}, argv=[], say=print)
    assert load_data(output) == {"new": 1}
    assert [path.name for path in tmp_path.iterdir()] == ["out.json"]


def test_validate_kernels_writes_a_record_that_validates(tmp_path: Path):
    """Does a real (CPU) run of scripts/validate_kernels.py leave a valid record of itself and
    of the kernels it ran, its report unchanged inside?"""
    output = tmp_path / "validate-kernels.json"
    done = warm_python.run(
        [sys.executable, str(SCRIPTS / "validate_kernels.py"), "--ops", "add", "--no-timing",
         "--output", str(output)],
        capture_output=True, text=True, timeout=300, cwd=ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"wrote {output}" in done.stdout
    record = _record(output)
    assert record["script"] == "scripts/validate_kernels.py"
    assert record["argv"] == ["--ops", "add", "--no-timing", "--output", str(output)]
    files = record["fingerprint"]["files"]
    for name in ("scripts/validate_kernels.py", "reference/kernels/add.py", "learning/ops/spec.py"):
        assert name in files, f"{name} missing from {sorted(files)}"
    data = record["data"]
    assert set(data) == {"environment", "seed", "elapsed_s", "cases", "compiles",
                         "plan_sweep", "note"}  # fmt: skip
    assert data["cases"] and all(case["op"] == "add" for case in data["cases"])
    assert validate_file(output) == []


# Scripts whose --output is not a measurement: a Markdown summary of reports, and the CUDA
# program's own JSON files (the record is the program's, and its log is plain text).
NOT_RECORDS = {"report_results.py", "cuda_runs.py"}
MEASURING = sorted(path.name for path in SCRIPTS.glob("*.py")
                   if '"--output"' in path.read_text()
                   and path.name not in NOT_RECORDS)  # fmt: skip


def test_the_measuring_scripts_are_found():
    """The discovery below sees the scripts it must (a rename would otherwise empty it)."""
    assert {"gemm_regimes.py", "row_plan_grid.py", "validate_kernels.py"} <= set(MEASURING)


@pytest.mark.parametrize("script", MEASURING)
def test_no_script_writes_its_output_by_hand(script: str):
    """Does every measurement script's --output go through the record writer?"""
    text = (SCRIPTS / script).read_text()
    assert "write_json(" in text or "write_output(" in text, script
    assert ".write_text(" not in text and "write_atomic(" not in text, script
