"""Are the grader's derived limits calibrated on the course's own GPU evidence?

Every genuine H200 report under ``results/h200/`` must raise no plausibility flag (a flag on
genuine data would drown a forged one), while the forgeries a learner would try must: a
DRAM-sized case at 9 TB/s, a GEMM above the tensor-core peak. The engine files the grader
requires in a fingerprint, derived from the release's code, must include every engine file the
recorded reports list.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from learning.grade import load_release
from learning.grade.plausibility import GPUS, dram_limit_gbps, gpu_for, review_flags

REPO = Path(__file__).resolve().parents[2]
RECORDED = sorted((REPO / "results" / "h200").glob("*.json"))


def _reports() -> list[tuple[str, dict]]:
    found = []
    for path in RECORDED:
        data = json.loads(path.read_text())
        if isinstance(data, dict) and data.get("schema_version") == 2:
            found.append((path.name, data))
    return found


REPORTS = _reports()


def test_there_is_evidence_to_calibrate_on():
    assert len(REPORTS) >= 20
    assert {name for name, _ in REPORTS} >= {"all.json", "all-cold.json", "training.json"}


@pytest.mark.parametrize("name, report", REPORTS, ids=[name for name, _ in REPORTS])
def test_genuine_h200_reports_raise_no_flag(name, report):
    assert review_flags(report) == []


def _all() -> dict:
    return copy.deepcopy(dict(REPORTS)["all.json"])


def _case(report: dict, op: str, shape: list[int], dtype: str) -> dict:
    return next(
        c for c in report["cases"] if (c["op"], c["shape"], c["dtype"]) == (op, shape, dtype)
    )


def test_a_forged_9_tbps_case_is_flagged_among_genuine_ones():
    report = _all()
    case = _case(report, "add", [16384, 4096], "float16")
    triton = next(v for v in case["variants"] if v["name"] == "triton")
    triton["median_ms"] = case["logical_bytes"] / 9e9  # 9 TB/s
    flags = review_flags(report)
    assert len(flags) == 1
    assert flags[0].startswith("add 16384x4096 float16 triton: 9000 GB/s is above what a H200")


def test_a_gemm_above_the_tensor_core_peak_is_flagged():
    report = _all()
    case = _case(report, "matmul", [8192, 8192, 8192], "float16")
    triton = next(v for v in case["variants"] if v["name"] == "triton")
    triton["median_ms"] = case["flops"] / 1200e9  # 1,200 TFLOP/s
    assert any("1200 TFLOP/s is above a H200's 989.4 TFLOP/s" in f for f in review_flags(report))


def test_an_inflated_l2_moves_no_limit():
    report = _all()
    before = review_flags(report)
    report["environment"]["l2_bytes"] = 2**40
    assert review_flags(report) == [
        *before,
        "environment.l2_bytes is 1099511627776, but a H200 has 62914560; the grader uses its own "
        "figure",
    ]


def test_the_dram_limit_is_the_bytes_beyond_the_l2_at_peak():
    h200 = gpu_for("NVIDIA H200")
    assert (h200.dram_tbps, h200.l2_bytes, h200.streaming_tbps) == (4.8, 60 * 2**20, 4.35)
    assert dram_limit_gbps(h200, h200.l2_bytes) is None  # fits the L2: no DRAM bound
    assert dram_limit_gbps(h200, 4 * h200.l2_bytes) == pytest.approx(4800 * 4 / 3)


def test_longer_names_are_matched_first():
    assert gpu_for("NVIDIA GH200 480GB").match == "GH200"
    assert gpu_for("NVIDIA H100 PCIe").match == "H100 PCIe"
    assert gpu_for("NVIDIA L40S").match == "L40S" and gpu_for("NVIDIA L4").match == "L4"
    for earlier, gpu in enumerate(GPUS):  # no row is shadowed by one above it
        assert gpu_for(f"NVIDIA {gpu.match}") is gpu, (earlier, gpu.match)


def test_required_engine_files_cover_what_recorded_reports_list():
    """The union of learning/ entries over the recorded reports is the minimum; the release's
    derived set must hold each of them that the release still has, but for
    ``learning/bench/__main__.py``: the recorded runs were ``python -m learning.bench``, while
    the ``kernel-bench`` command calls ``learning.bench.cli`` and never loads it."""
    release = load_release(REPO)
    listed = {
        path
        for _, report in REPORTS
        for path in report["fingerprint"]["files"]
        if path.startswith("learning/") and (REPO / path).is_file()
    }
    assert "learning/bench/cli.py" in release.engine_files()
    assert listed - release.engine_files() == {"learning/bench/__main__.py"}
