"""The CUDA C++ softmax program and scripts/cuda_runs.py, tested without a GPU.

A CPU machine can compile the program (when nvcc is installed) but never run it, so the run
side is tested on a recorded-shape fixture: tests/cuda/fixtures/cuda-softmax-fixture.json holds
made-up numbers in the program's JSON layout. It is a test input, not evidence. It stays raw,
as the program writes it; the script records cuda_runs.py writes after each run are made from it
in the tests, and both forms must read the same.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "scripts" / "cuda_runs.py"
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "cuda-softmax-fixture.json"
KERNELS = ("serial", "block_per_row", "warp_per_row", "online")


def _load_cuda_runs():
    spec = importlib.util.spec_from_file_location("cuda_runs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cuda_runs = _load_cuda_runs()


# --------------------------------------------------------------------------- the program builds


@pytest.mark.skipif(
    shutil.which("nvcc") is None or shutil.which("make") is None, reason="needs nvcc and make"
)
def test_program_compiles_for_sm90_without_spills(tmp_path):
    """Does `make -C cuda` compile every kernel for sm_90, with no register spills?

    Builds into a temporary folder (BUILD_DIR), so cuda/build/ is left alone. ptxas -v prints
    one "spill stores" line a kernel; a spill means a kernel ran out of registers and moves
    values through local memory, which would change what the timings mean.
    """
    completed = subprocess.run(
        ["make", "-C", str(REPO_ROOT / "cuda"), f"BUILD_DIR={tmp_path}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, f"nvcc failed:\n{output[-3000:]}"
    assert (tmp_path / "softmax").is_file(), "make succeeded but build/softmax is missing"
    for kernel in KERNELS:
        assert f"softmax_{kernel}" in output, f"ptxas never compiled softmax_{kernel}"
    assert "for 'sm_90'" in output, "the build did not target sm_90"
    spills = re.findall(r"(\d+) bytes spill stores", output)
    assert spills and all(count == "0" for count in spills), f"a kernel spills:\n{output}"


# --------------------------------------------------------------------------- reading reports


def test_fixture_is_labelled_as_a_fixture():
    """Could anyone mistake the fixture for a measurement?"""
    report = json.loads(FIXTURE.read_text())
    assert "not a measurement" in report["note"]
    assert "not a measurement" in report["gpu_name"]


def test_from_json_tabulates_runs_side_by_side(capsys):
    """Given recorded reports, does --from-json print every kernel with one median a run?"""
    status = cuda_runs.main(["--from-json", str(FIXTURE), str(FIXTURE), str(FIXTURE)])
    table = capsys.readouterr().out
    assert status == 0
    assert "64 x 512" in table and "3 run(s)" in table
    assert re.search(r"run 1\s+run 2\s+run 3\s+spread", table), table
    rows = {line.split()[0]: line for line in table.splitlines() if line.split()}
    for kernel in KERNELS:
        assert kernel in rows, f"{kernel} missing from:\n{table}"
    # block_per_row: 2 * 64 * 512 * 4 bytes in 0.02 ms = 13.1 GB/s, and 0% spread (same file)
    assert rows["block_per_row"].split()[1:] == [
        "64",
        "0.0200",
        "0.0200",
        "0.0200",
        "0.0%",
        "13.1",
        "400x",
    ]
    # the kernel that failed its check is shown as failed, never with a time
    assert rows["online"].split()[2:] == ["failed"] * 3
    assert "estimate, not a measurement" in table  # serial ran on 16 of 64 rows


def _as_record(report: dict, path: Path) -> Path:
    """``report`` wrapped as the script record cuda_runs.py writes after a run."""
    from learning.report import write_record

    return write_record(path, script=SCRIPT, data=report, argv=[])


def test_a_record_reads_as_the_raw_json_it_wraps(tmp_path, capsys):
    """Does --from-json tabulate a script record of a run exactly as the raw JSON it holds?"""
    record = _as_record(json.loads(FIXTURE.read_text()), tmp_path / "run1.json")
    assert cuda_runs.load_report(record) == cuda_runs.load_report(FIXTURE)
    assert cuda_runs.main(["--from-json", str(FIXTURE), str(FIXTURE)]) == 0
    raw_table = capsys.readouterr().out
    assert cuda_runs.main(["--from-json", str(record), str(FIXTURE)]) == 0
    assert capsys.readouterr().out == raw_table


def test_a_record_of_a_malformed_report_is_rejected(tmp_path, capsys):
    """Is what a record wraps checked like a raw report (exit 2, one line naming the fault)?"""
    record = _as_record({**GOOD, "format": "kernel-bench/2"}, tmp_path / "bad.json")
    assert cuda_runs.main(["--from-json", str(record)]) == 2
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1 and "format" in error and "bad.json" in error


FAKE_PROGRAM = """#!{python}
# Stands in for cuda/build/softmax: writes the FIXTURE (made-up numbers) to --output.
import shutil, sys

shutil.copyfile({fixture!r}, sys.argv[sys.argv.index("--output") + 1])
print("FIXTURE program: no GPU was used")
"""


def test_each_run_is_rewritten_as_a_record_of_the_cuda_sources(tmp_path, capsys):
    """After each run, is the program's JSON a script record (its data unchanged) that
    fingerprints the CUDA sources and this script, and validates?"""
    from learning.report import load_data, validate_file

    program = tmp_path / "softmax"
    program.write_text(FAKE_PROGRAM.format(python=sys.executable, fixture=str(FIXTURE)))
    program.chmod(0o755)
    out = tmp_path / "runs"
    status = cuda_runs.main(
        ["--binary", str(program), "--runs", "2", "--shape", "64x512", "--output-dir", str(out)]
    )
    printed = capsys.readouterr().out
    assert status == 0, printed
    runs = sorted(out.glob("cuda-softmax-64x512-run*.json"))
    assert [path.name for path in runs] == [
        "cuda-softmax-64x512-run1.json",
        "cuda-softmax-64x512-run2.json",
    ]
    for path in runs:
        record = json.loads(path.read_text())
        assert record["record"] == "script-output" and record["script"] == "scripts/cuda_runs.py"
        files = record["fingerprint"]["files"]
        for name in ("cuda/softmax.cu", "cuda/softmax_kernels.cuh", "cuda/Makefile",
                     "scripts/cuda_runs.py", "scripts/_records.py"):  # fmt: skip
            assert name in files, f"{name} missing from {sorted(files)}"
        assert load_data(path) == GOOD
        assert validate_file(path) == []
        assert f"wrote {path}" in printed
    assert "2 run(s)" in printed


def test_spread_is_relative_to_the_fastest_run():
    """Is the spread (largest - smallest) / smallest run median, in percent?"""
    assert cuda_runs._spread_percent([1.0, 1.1, 1.05]) == pytest.approx(10.0)


def test_log_is_written(tmp_path, capsys):
    """Does --log keep a copy of what was printed?"""
    log = tmp_path / "logs" / "cuda-softmax-runs.log"
    assert cuda_runs.main(["--from-json", str(FIXTURE), "--log", str(log)]) == 0
    assert log.read_text().strip() == capsys.readouterr().out.strip()


# --------------------------------------------------------------------------- malformed reports


def test_malformed_json_is_rejected_with_one_line_and_exit_2(tmp_path):
    """Does a truncated report stop the script with exit 2 and a one-line error naming it?"""
    broken = tmp_path / "broken.json"
    broken.write_text(FIXTURE.read_text()[:200])
    completed = subprocess.run(
        [sys.executable, str(SCRIPT), "--from-json", str(broken)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 2
    assert completed.stdout == ""
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1, completed.stderr
    assert lines[0].startswith("error: ") and "broken.json" in lines[0] and "not JSON" in lines[0]


def _without(report: dict, *keys: str) -> dict:
    report = copy.deepcopy(report)
    for key in keys:
        report.pop(key)
    return report


def _edit_kernel(report: dict, index: int, **fields) -> dict:
    report = copy.deepcopy(report)
    report["kernels"][index].update(fields)
    return report


GOOD = json.loads(FIXTURE.read_text())
MALFORMED = {
    "wrong format": ({**GOOD, "format": "kernel-bench/2"}, "format"),
    "no kernels": (_without(GOOD, "kernels"), "kernels"),
    "shape not ints": ({**GOOD, "shape": {"rows": "64", "cols": 512}}, "shape"),
    "passed without samples": (_edit_kernel(GOOD, 1, samples_ms=[]), "no samples"),
    "negative sample": (_edit_kernel(GOOD, 2, samples_ms=[0.01, -1.0]), "samples_ms"),
    "rows_timed above rows": (_edit_kernel(GOOD, 0, rows_timed=65), "rows_timed"),
    "a list at the top": ([GOOD], "JSON object"),
}


@pytest.mark.parametrize("case", MALFORMED, ids=list(MALFORMED))
def test_report_missing_what_the_table_needs_is_rejected(case, tmp_path, capsys):
    """Does a report that parses but lacks a field the table reads give exit 2 and say which?"""
    report, expected_words = MALFORMED[case]
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    assert cuda_runs.main(["--from-json", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1
    assert expected_words in captured.err, captured.err


def test_missing_binary_is_a_one_line_error(tmp_path, capsys):
    """Does --binary pointing nowhere fail with exit 2 before running anything?"""
    status = cuda_runs.main(
        ["--binary", str(tmp_path / "nope"), "--output-dir", str(tmp_path / "out")]
    )
    assert status == 2
    assert "no such program" in capsys.readouterr().err
