"""Is every way of doctoring a learner's report caught by the grader, with a reason that says so?

One genuine report is made the way a learner makes it: ``kernel-bench --impl learner`` on the
CPU, run inside a learner's copy of a release (``learning.grade.clone``), so its fingerprint
names ``exercises/kernels/add.py`` as a learner's report does. Each test then edits one thing
(a sample, the median, a hash, a snapshot, a file, the schema version, the implementation, the
owner) and asserts the exact reason :func:`learning.grade.grade_submissions` gives.

Kernels that cheat (zeros, side streams, reused memory) are ``test_kernel_cheats.py``'s.
"""

from __future__ import annotations

import copy
import json
import shutil
import statistics
from pathlib import Path

import pytest

from learning.grade import grade_submissions
from learning.grade.clone import make_clone, run_bench, submit
from learning.report import create_snapshots
from learning.report.stats import paired

LEARNER_KERNEL = "exercises/kernels/add.py"
BENCH = [
    "--op",
    "add",
    "--shape",
    "16",
    "256",
    "--dtype",
    "float32",
    "--samples",
    "3",
    "--visits",
    "1",
    "--impl",
    "learner",
    "--device",
    "cpu",
]


@pytest.fixture(scope="module")
def genuine(tmp_path_factory) -> dict:
    """A release, a learner's clone of it with a working add kernel, and that clone's report."""
    work = tmp_path_factory.mktemp("tampering")
    release = make_clone(work / "release")
    clone = make_clone(
        work / "alice", release, {LEARNER_KERNEL: release / "reference" / "kernels" / "add.py"}
    )
    report = run_bench(clone, BENCH, work / "add.json")
    return {"release": release, "clone": clone, "report": json.loads(report.read_text())}


def _grade(tmp_path: Path, genuine: dict, report: dict, *, learner: str = "alice", release=None):
    """Submit ``report`` as ``learner``'s only report and grade the class (reports only)."""
    submissions = tmp_path / "submissions"
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    submit(genuine["clone"], submissions, learner, [path])
    grades = grade_submissions(
        submissions, release_root=release or genuine["release"], exercises=()
    )
    return {grade.learner: grade for grade in grades}


def _reasons(grade) -> str:
    return "\n".join(grade.reasons())


def _learner_variant(report: dict) -> dict:
    return next(v for v in report["cases"][0]["variants"] if v["kind"] == "learner")


def test_the_genuine_report_is_trusted(tmp_path, genuine):
    """Does the untouched report earn its points, with nothing flagged?"""
    alice = _grade(tmp_path, genuine, genuine["report"])["alice"]
    assert alice.reports[0].findings == ()
    assert alice.report_points == alice.report_max > 0


def test_an_edited_sample_is_caught(tmp_path, genuine):
    report = copy.deepcopy(genuine["report"])
    variant = _learner_variant(report)
    variant["samples_ms"][variant["samples_ms"].index(variant["min_ms"])] = variant["min_ms"] / 2
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert "[consistency] add 16x256 float32 learner: min_ms" in _reasons(alice)
    assert "does not follow from samples_ms" in _reasons(alice)
    assert alice.report_points == 0


def test_an_edited_median_is_caught(tmp_path, genuine):
    report = copy.deepcopy(genuine["report"])
    _learner_variant(report)["median_ms"] /= 2
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert "[consistency] add 16x256 float32 learner: median_ms" in _reasons(alice)
    # GB/s and the ratio were left as they were: they no longer follow from the new median.
    assert "logical_gbps" in _reasons(alice) and "ratio_vs_eager" in _reasons(alice)


def test_an_edited_learner_hash_is_caught(tmp_path, genuine):
    report = copy.deepcopy(genuine["report"])
    report["fingerprint"]["files"][LEARNER_KERNEL] = "0" * 64
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert (
        f"[learner-file] {LEARNER_KERNEL}: the submitted file is not the one the report measured"
        in _reasons(alice)
    )


def test_an_edited_engine_hash_is_caught(tmp_path, genuine):
    report = copy.deepcopy(genuine["report"])
    report["fingerprint"]["files"]["learning/ops.py"] = "0" * 64
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert "[release-file] learning/ops.py: changed since the run" in _reasons(alice)


def test_a_modified_engine_is_caught(tmp_path, genuine):
    """A report run with an edited engine names a hash the release does not have."""
    report = copy.deepcopy(genuine["report"])
    report["fingerprint"]["files"]["learning/correctness.py"] = "1" * 64
    del report["fingerprint"]["files"]["learning/ops.py"]  # and a file dropped from the list
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert "[release-file] learning/correctness.py: changed since the run" in _reasons(alice)
    assert (
        "[fingerprint-incomplete] files every run executes are missing: learning/ops.py"
        in _reasons(alice)
    )


def test_a_swapped_snapshot_is_caught(tmp_path, genuine):
    """A snapshot must hold the measured source; one with other content does not excuse a hash."""
    release = tmp_path / "release"
    shutil.copytree(genuine["release"], release)
    snapshot = "results/snapshots/0123456789abcdef-ops.py"
    (release / snapshot).parent.mkdir(parents=True)
    (release / snapshot).write_text("# not the measured ops.py\n")
    report = copy.deepcopy(genuine["report"])
    report["source_snapshots"] = {"learning/ops.py": snapshot}
    alice = _grade(tmp_path, genuine, report, release=release)["alice"]
    assert (
        f"[release-file] learning/ops.py: its snapshot {snapshot} does not hold the measured source"
        in (_reasons(alice))
    )


def test_a_snapshot_outside_the_release_snapshots_is_caught(tmp_path, genuine):
    report = copy.deepcopy(genuine["report"])
    report["source_snapshots"] = {"learning/ops.py": "results/snapshots/../../../alice/ops.py"}
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert (
        "[release-file] learning/ops.py: snapshot results/snapshots/../../../alice/ops.py "
        "is outside results/snapshots" in _reasons(alice)
    )


def test_a_genuine_snapshot_keeps_an_old_report_valid(tmp_path, genuine):
    """The release moved on (ops.py edited) but preserved the measured ops.py: still trusted."""
    release = tmp_path / "release"
    shutil.copytree(genuine["release"], release)
    snapshots, problems = create_snapshots(genuine["report"], release, ["learning/ops.py"])
    assert problems == []
    with open(release / "learning" / "ops.py", "a") as ops_file:
        ops_file.write("\n# edited after the run\n")
    report = {**genuine["report"], "source_snapshots": snapshots}
    alice = _grade(tmp_path, genuine, report, release=release)["alice"]
    assert alice.reasons() == []


def test_a_missing_learner_file_is_caught(tmp_path, genuine):
    grades_dir = tmp_path / "class"
    grades_dir.mkdir()
    path = tmp_path / "report.json"
    path.write_text(json.dumps(genuine["report"]))
    folder = submit(genuine["clone"], grades_dir, "alice", [path])
    (folder / LEARNER_KERNEL).unlink()
    alice = grade_submissions(grades_dir, release_root=genuine["release"], exercises=())[0]
    assert (
        f"[learner-file] {LEARNER_KERNEL}: the report measured it, "
        "but the submission has no such file" in _reasons(alice)
    )


def test_a_wrong_schema_version_is_rejected(tmp_path, genuine):
    report = {**genuine["report"], "schema_version": 3}
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert "[schema] unsupported schema_version 3" in _reasons(alice)
    assert alice.report_points == 0


def test_a_report_that_is_not_json_is_rejected(tmp_path, genuine):
    submissions = tmp_path / "submissions"
    folder = submit(genuine["clone"], submissions, "alice", [])
    (folder / "reports" / "add.json").write_text('{"schema_version": 2, "cases": [')
    alice = grade_submissions(submissions, release_root=genuine["release"], exercises=())[0]
    assert "reports/add.json: [unreadable] not a readable JSON report" in _reasons(alice)


def test_a_learner_report_claiming_reference_is_flagged(tmp_path, genuine):
    report = copy.deepcopy(genuine["report"])
    report["settings"]["impl"] = "reference"
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert "[claims-reference] the report measures impl: reference" in _reasons(alice)


def test_a_report_of_another_learners_files_is_caught(tmp_path, genuine):
    """Bob submits alice's report; his own add.py is the untouched stub."""
    path = tmp_path / "alice.json"
    path.write_text(json.dumps(genuine["report"]))
    submissions = tmp_path / "submissions"
    submit(genuine["clone"], submissions, "alice", [path])
    bob_clone = make_clone(tmp_path / "bob", genuine["release"])
    submit(bob_clone, submissions, "bob", [path])
    grades = {
        g.learner: g
        for g in grade_submissions(submissions, release_root=genuine["release"], exercises=())
    }
    bob = _reasons(grades["bob"])
    assert (
        f"[learner-file] {LEARNER_KERNEL}: the submitted file is not the one the report measured"
        in bob
    )
    assert (
        f"[copied] {LEARNER_KERNEL}: the measured file is the one learner(s) alice submitted" in bob
    )
    assert grades["alice"].reasons() == []


def test_identical_submissions_are_flagged_for_review(tmp_path, genuine):
    """Two learners with the same kernel file: a question for a person, not a lost point."""
    path = tmp_path / "alice.json"
    path.write_text(json.dumps(genuine["report"]))
    submissions = tmp_path / "submissions"
    for learner in ("alice", "carol"):
        submit(genuine["clone"], submissions, learner, [path])
    grades = {
        g.learner: g
        for g in grade_submissions(submissions, release_root=genuine["release"], exercises=())
    }
    carol = grades["carol"]
    assert carol.reasons() == []
    assert any("[copied]" in flag and "alice" in flag for flag in carol.review_flags())


# --------------------------------------------------------------------------- plausibility


def _as_h200_run(report: dict, *, logical_bytes: int, learner_ms: float, eager_ms: float) -> dict:
    """The report made to look like a GPU run, every derived figure recomputed to agree."""
    report = copy.deepcopy(report)
    report["settings"].update(device="cuda", timing="graph")
    report["environment"].update(
        gpu_name="NVIDIA H200", sm_count=132, l2_bytes=60 * 2**20, driver="570.00", cuda="12.8"
    )
    report["gpu_utilization_percent"].update(before=0.0, after=0.0, method="nvml", reason=None)
    case = report["cases"][0]
    case["logical_bytes"] = logical_bytes
    for variant in case["variants"]:
        median = learner_ms if variant["kind"] == "learner" else eager_ms
        variant["samples_ms"] = [median * 0.99, median, median * 1.01]
    eager = next(v for v in case["variants"] if v["name"] == case["eager_variant"])
    for variant in case["variants"]:
        median = statistics.median(variant["samples_ms"])
        variant.update(
            median_ms=median,
            min_ms=min(variant["samples_ms"]),
            max_ms=max(variant["samples_ms"]),
            logical_gbps=logical_bytes / (median * 1e6),
            tflops=case["flops"] / (median * 1e9),
            ratio_vs_eager=eager_ms / median,
            paired_vs_eager=None if variant is eager else paired(variant, eager),
        )
    return report


def test_impossible_bandwidth_is_flagged_for_review_not_failed(tmp_path, genuine):
    # 1 GB in 0.1 ms is 10 TB/s: more than an H200's memory can stream.
    report = _as_h200_run(genuine["report"], logical_bytes=10**9, learner_ms=0.1, eager_ms=0.3)
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert alice.reasons() == []
    flags = "\n".join(alice.review_flags())
    assert "[plausibility] add 16x256 float32 learner: 10000 GB/s on a DRAM-sized case" in flags


def test_a_tenfold_speedup_is_flagged_for_review(tmp_path, genuine):
    report = _as_h200_run(genuine["report"], logical_bytes=10**6, learner_ms=0.01, eager_ms=0.2)
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert "20.0x faster than PyTorch eager" in "\n".join(alice.review_flags())


def test_an_unknown_gpu_is_flagged_for_review(tmp_path, genuine):
    report = _as_h200_run(genuine["report"], logical_bytes=10**6, learner_ms=0.2, eager_ms=0.2)
    report["environment"]["gpu_name"] = "Imaginary Accelerator 9000"
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert "[plausibility] no streaming ceiling is known for GPU 'Imaginary Accelerator 9000'" in (
        "\n".join(alice.review_flags())
    )


def test_a_gpu_run_without_its_environment_is_caught(tmp_path, genuine):
    report = _as_h200_run(genuine["report"], logical_bytes=10**6, learner_ms=0.2, eager_ms=0.2)
    report["environment"].update(gpu_name=None, driver=None)
    report["gpu_utilization_percent"].update(before=None, after=None, reason=None)
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert "[environment] a GPU run without gpu_name, driver" in _reasons(alice)
    assert "[environment] GPU utilization before and after the run was not recorded" in _reasons(
        alice
    )


def test_a_timed_variant_that_failed_its_check_is_caught(tmp_path, genuine):
    report = copy.deepcopy(genuine["report"])
    _learner_variant(report)["correctness"].update(passed=False, reason="values outside tolerance")
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert "[consistency] add 16x256 float32 learner: timed without passing the oracle" in _reasons(
        alice
    )
