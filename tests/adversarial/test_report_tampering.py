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
import csv
import hashlib
import json
import shutil
import statistics
from pathlib import Path

import own_work
import pytest
from own_work import own_solution  # the learner's own add kernel, not the reference's

from learning import ops
from learning.grade import grade_submissions
from learning.grade.cli import main as grade_main
from learning.grade.clone import make_clone, run_bench, submit
from learning.report import create_snapshots
from learning.report.fingerprint import sha256_file
from learning.report.normalize import normalized_sha256
from learning.report.stats import MARGIN
from learning.report.verdicts import verdicts

LEARNER_KERNEL = "exercises/kernels/add.py"
BENCH = [
    "--op",
    "add",
    "--shape",
    "16",
    "256",
    "--shape",
    "8",
    "128",
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


# One pytest-xdist worker makes the genuine reports every test here edits (a module fixture).
pytestmark = pytest.mark.xdist_group("tampering")


@pytest.fixture(scope="module")
def genuine(tmp_path_factory) -> dict:
    """A release, a learner's clone of it with a working add kernel, and that clone's report."""
    work = tmp_path_factory.mktemp("tampering")
    release = make_clone(work / "release")  # the course, as learners clone it
    solved = work / "add.py"
    solved.write_bytes(own_solution(LEARNER_KERNEL, release))
    clone = make_clone(work / "alice", release, {LEARNER_KERNEL: solved})
    report = run_bench(clone, BENCH, work / "add.json")
    as_reference = [word if word != "learner" else "reference" for word in BENCH]
    reference = run_bench(clone, as_reference, work / "add-reference.json")
    return {
        "release": release,
        "clone": clone,
        "report": json.loads(report.read_text()),
        "reference_report": json.loads(reference.read_text()),
    }


def _grade(
    tmp_path: Path, genuine: dict, report: dict, *, learner="alice", release=None, edit=None,
    files=None,
):
    """Submit ``report`` as ``learner``'s only report and grade the class (reports only).
    ``edit``: text appended to (or written as) submitted files, ``{path: text}``; ``files``:
    submitted files replaced, ``{path: bytes}``."""
    submissions = tmp_path / "submissions"
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    folder = submit(genuine["clone"], submissions, learner, [path])
    for name, text in (edit or {}).items():
        with open(folder / name, "a") as handle:
            handle.write(text)
    for name, content in (files or {}).items():
        (folder / name).write_bytes(content)
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
    report["fingerprint"]["files"]["learning/ops/spec.py"] = "0" * 64
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert "[release-file] learning/ops/spec.py: changed since the run" in _reasons(alice)


def test_a_modified_engine_is_caught(tmp_path, genuine):
    """A report run with an edited engine names a hash the release does not have."""
    report = copy.deepcopy(genuine["report"])
    report["fingerprint"]["files"]["learning/correctness.py"] = "1" * 64
    del report["fingerprint"]["files"]["learning/bench/timers.py"]  # and a file dropped
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert "[release-file] learning/correctness.py: changed since the run" in _reasons(alice)
    assert (
        "[fingerprint-incomplete] engine files every kernel-bench run loads are missing: "
        "learning/bench/timers.py" in _reasons(alice)
    )


def test_a_swapped_snapshot_is_caught(tmp_path, genuine):
    """A snapshot must hold the measured source; one with other content does not excuse a hash."""
    release = tmp_path / "release"
    shutil.copytree(genuine["release"], release)
    snapshot = "results/snapshots/0123456789abcdef-ops.py"
    (release / snapshot).parent.mkdir(parents=True)
    (release / snapshot).write_text("# not the measured ops.py\n")
    report = copy.deepcopy(genuine["report"])
    report["source_snapshots"] = {"learning/ops/spec.py": snapshot}
    alice = _grade(tmp_path, genuine, report, release=release)["alice"]
    assert (
        f"[release-file] learning/ops/spec.py: its snapshot {snapshot} does not hold the "
        "measured source" in (_reasons(alice))
    )


def test_a_snapshot_outside_the_release_snapshots_is_caught(tmp_path, genuine):
    report = copy.deepcopy(genuine["report"])
    report["source_snapshots"] = {"learning/ops/spec.py": "results/snapshots/../../../alice/ops.py"}
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert (
        "[release-file] learning/ops/spec.py: snapshot results/snapshots/../../../alice/ops.py "
        "is outside results/snapshots" in _reasons(alice)
    )


def test_a_genuine_snapshot_keeps_an_old_report_valid(tmp_path, genuine):
    """The release moved on (the op spec edited) but preserved the measured one: trusted."""
    release = tmp_path / "release"
    shutil.copytree(genuine["release"], release)
    snapshots, problems = create_snapshots(genuine["report"], release, ["learning/ops/spec.py"])
    assert problems == []
    with open(release / "learning" / "ops" / "spec.py", "a") as ops_file:
        ops_file.write("\n# edited after the run\n")
    report = {**genuine["report"], "source_snapshots": snapshots}
    alice = _grade(tmp_path, genuine, report, release=release)["alice"]
    assert alice.reasons() == []


def test_an_instructor_may_reword_a_message_or_the_cli_mid_term(tmp_path, genuine):
    """Files a run loads that no case's figures depend on (the command line, the table
    printer, the report package) are provenance: edited in the release with no snapshot,
    they leave a learner's report trusted. A file that binds (the timers) does not."""
    release = tmp_path / "release"
    shutil.copytree(genuine["release"], release)
    for path in ("learning/bench/cli.py", "learning/bench/output.py", "learning/report/stats.py"):
        assert path in genuine["report"]["fingerprint"]["files"], path
        with open(release / path, "a") as edited:
            edited.write("\nEDITED_MID_TERM = True\n")
    alice = _grade(tmp_path, genuine, genuine["report"], release=release)["alice"]
    assert alice.reasons() == []
    with open(release / "learning" / "bench" / "timers.py", "a") as edited:
        edited.write("\nEDITED_MID_TERM = True\n")
    again = tmp_path / "again"
    again.mkdir()
    alice = _grade(again, genuine, genuine["report"], release=release)["alice"]
    assert "[release-file] learning/bench/timers.py: changed since the run" in _reasons(alice)


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


def test_a_report_of_the_reference_kernel_copied_is_caught(tmp_path, genuine):
    """The learner's add.py is the reference's, solutions and all (the copy a learner makes
    with ``cp``, helper imports made absolute), and the report measured that file: it earns
    nothing, the finding naming the reference kernel it copied."""
    copied = own_work.make_exercises.solved(LEARNER_KERNEL, genuine["release"])
    report = copy.deepcopy(genuine["report"])
    report["fingerprint"]["files"][LEARNER_KERNEL] = hashlib.sha256(copied).hexdigest()
    report["fingerprint"]["normalized"][LEARNER_KERNEL] = normalized_sha256(copied, "add.py")
    alice = _grade(tmp_path, genuine, report, files={LEARNER_KERNEL: copied})["alice"]
    assert (f"[reference-copy] {LEARNER_KERNEL}: _add_kernel is the course's _add_kernel from "
            "reference/kernels/add.py") in _reasons(alice)
    assert [f.code for f in alice.reports[0].findings] == ["reference-copy"]
    assert alice.report_points == 0


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


def _refigure(case: dict, settings: dict) -> None:
    """Every figure of the case recomputed from its samples, as the engine writes them (the
    run's ``settings``: its margin and visits)."""
    eager = next(v for v in case["variants"] if v["name"] == case["eager_variant"])
    for variant in case["variants"]:
        if variant["status"] != "timed":
            continue
        samples = variant["samples_ms"]
        median = statistics.median(samples)
        variant.update(
            median_ms=median,
            min_ms=min(samples),
            max_ms=max(samples),
            logical_gbps=case["logical_bytes"] / (median * 1e6),
            tflops=case["flops"] / (median * 1e9) if case["flops"] else None,
        )
    for variant in case["variants"]:
        if variant["status"] != "timed":
            continue
        variant["ratio_vs_eager"] = eager["median_ms"] / variant["median_ms"]
    judged = verdicts(case, {**settings, "margin": MARGIN})  # the intervals and verdicts too
    for variant in case["variants"]:
        variant.update(judged[variant["name"]])


def _as_h200_run(
    report: dict, *, shape=(16384, 4096), learner_ms: float, eager_ms: float, triton_ms=None
) -> dict:
    """The report made to look like an H200 run of one case of ``shape``, every figure
    (bytes and FLOPs from the registry, medians, GB/s, ratios) recomputed to agree."""
    report = copy.deepcopy(report)
    report["settings"].update(device="cuda", timing="graph", shapes=[list(shape)])
    report["environment"].update(
        gpu_name="NVIDIA H200", sm_count=132, l2_bytes=60 * 2**20, driver="570.00", cuda="12.8"
    )
    report["gpu_utilization_percent"].update(before=0.0, after=0.0, method="nvml", reason=None)
    report["cases"] = report["cases"][:1]
    case = report["cases"][0]
    spec, dtype = ops.OPS[case["op"]], ops.DTYPES[case["dtype"]]
    case.update(shape=list(shape), logical_bytes=spec.logical_bytes(shape, dtype),
                flops=spec.flops(shape))  # fmt: skip
    medians = {"learner": learner_ms, "triton": triton_ms or learner_ms}
    for number, variant in enumerate(case["variants"]):
        median = medians.get(variant["kind"], eager_ms)
        jitter = 1 + 0.001 * number  # no two variants alike
        variant["samples_ms"] = [median * 0.99 * jitter, median, median * 1.01 * jitter]
    _refigure(case, report["settings"])
    return report


def _flags(grade) -> str:
    return "\n".join(grade.review_flags())


def test_impossible_bandwidth_is_flagged_for_review_not_failed(tmp_path, genuine):
    # 16384 x 4096 fp32 add moves 805 MB; in 0.0895 ms that is 9 TB/s, above what an H200's
    # 4.8 TB/s DRAM allows for a case of that size (its 60 MiB L2 holds too little of it).
    report = _as_h200_run(genuine["report"], learner_ms=0.0895, eager_ms=0.2, triton_ms=0.2)
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert alice.reasons() == []
    assert (
        "[plausibility] add 16384x4096 float32 learner: 8998 GB/s is above what a H200 can "
        "reach on a case of 768 MiB" in _flags(alice)
    )


def test_an_inflated_l2_does_not_switch_the_bandwidth_flag_off(tmp_path, genuine):
    report = _as_h200_run(genuine["report"], learner_ms=0.0895, eager_ms=0.2, triton_ms=0.2)
    report["environment"]["l2_bytes"] = 10**10  # "the whole case fits in my L2"
    alice = _grade(tmp_path, genuine, report)["alice"]
    flags = _flags(alice)
    assert "8998 GB/s is above what a H200 can reach" in flags
    assert "environment.l2_bytes is 10000000000, but a H200 has 62914560" in flags


def test_a_genuine_looking_h200_report_raises_no_flag(tmp_path, genuine):
    """4.2 TB/s on a DRAM-sized case, as fast as the reference: nothing to review."""
    report = _as_h200_run(genuine["report"], learner_ms=0.1917, eager_ms=0.2, triton_ms=0.195)
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert alice.reasons() == [] and alice.review_flags() == []


def test_a_tenfold_speedup_is_flagged_for_review(tmp_path, genuine):
    report = _as_h200_run(
        genuine["report"], shape=(1024, 1024), learner_ms=0.01, eager_ms=0.2, triton_ms=0.011
    )
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert "20.0x faster than PyTorch eager (above 10x for add)" in _flags(alice)


def test_a_learner_far_faster_than_the_reference_is_flagged(tmp_path, genuine):
    report = _as_h200_run(
        genuine["report"], shape=(1024, 1024), learner_ms=0.004, eager_ms=0.01, triton_ms=0.01
    )
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert "2.5x faster than the course's reference kernel in the same rounds" in _flags(alice)


def test_cpu_reports_are_exempt_from_speed_flags(tmp_path, genuine):
    """The interpreter's timings say nothing about a GPU: a 100x 'speedup' there is no flag."""
    report = copy.deepcopy(genuine["report"])
    for case in report["cases"]:
        learner = next(v for v in case["variants"] if v["kind"] == "learner")
        learner["samples_ms"] = [sample / 1000 for sample in learner["samples_ms"]]
        _refigure(case, report["settings"])
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert alice.reasons() == [] and alice.review_flags() == []


def test_an_unknown_gpu_is_flagged_for_review(tmp_path, genuine):
    report = _as_h200_run(genuine["report"], learner_ms=0.2, eager_ms=0.2)
    report["environment"]["gpu_name"] = "Imaginary Accelerator 9000"
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert (
        "[plausibility] no row in the grader's GPU table for 'Imaginary Accelerator 9000'"
        in _flags(alice)
    )


def test_a_gpu_run_without_its_environment_is_caught(tmp_path, genuine):
    report = _as_h200_run(genuine["report"], learner_ms=0.2, eager_ms=0.2)
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


# --------------------------------------------------------------------------- derived, not read


def test_an_edited_logical_bytes_is_caught(tmp_path, genuine):
    """Twice the bytes, and the GB/s recomputed so the figures agree with each other."""
    report = copy.deepcopy(genuine["report"])
    case = report["cases"][0]
    case["logical_bytes"] *= 2
    _refigure(case, report["settings"])
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert (
        "[derived] add 16x256 float32: logical_bytes is 98304, but learning.ops gives 49152"
        in _reasons(alice)
    )
    assert alice.report_points == 0


def test_a_relabelled_shape_is_caught(tmp_path, genuine):
    report = copy.deepcopy(genuine["report"])
    report["cases"][0]["shape"] = [4096, 4096]
    alice = _grade(tmp_path, genuine, report)["alice"]
    reasons = _reasons(alice)
    assert "[derived] add 4096x4096 float32: logical_bytes is 49152, but learning.ops gives" in (
        reasons
    )
    assert "[cases] the settings ask for 2 cases, but 1 are missing: add 16x256 float32" in reasons
    assert "[cases] cases the settings do not ask for: add 4096x4096 float32" in reasons


def test_a_shape_against_the_ops_convention_is_caught(tmp_path, genuine):
    report = copy.deepcopy(genuine["report"])
    report["cases"][0]["shape"] = [16, 256, 1]
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert "[derived] add 16x256x1 float32: add takes 2 dimensions (MxN)" in _reasons(alice)


def test_a_deleted_case_is_caught(tmp_path, genuine):
    report = copy.deepcopy(genuine["report"])
    del report["cases"][1]
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert (
        "[cases] the settings ask for 2 cases, but 1 are missing: add 8x128 float32"
        in _reasons(alice)
    )


def test_passed_with_a_huge_tolerance_used_is_caught(tmp_path, genuine):
    report = copy.deepcopy(genuine["report"])
    _learner_variant(report)["correctness"]["tolerance_used"] = 1e6
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert (
        "[correctness] add 16x256 float32 learner: passed: true, but tolerance_used is 1e+06"
        in _reasons(alice)
    )


@pytest.mark.parametrize("factor", [1.0, 0.8])
def test_learner_samples_copied_from_the_reference_are_caught(tmp_path, genuine, factor):
    """The reference kernel's samples (or the same scaled) given as the learner's."""
    report = copy.deepcopy(genuine["report"])
    case = report["cases"][0]
    triton = next(v for v in case["variants"] if v["name"] == "triton")
    _learner_variant(report)["samples_ms"] = [sample * factor for sample in triton["samples_ms"]]
    _refigure(case, report["settings"])
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert "[copied-samples] add 16x256 float32 learner: its samples are triton's samples" in (
        _reasons(alice)
    )


def test_a_reference_run_relabelled_as_the_learners_is_caught(tmp_path, genuine):
    """A genuine --impl reference run: impl set to learner, the triton variant renamed to
    learner, and the learner's files (with their submitted hashes) added to the fingerprint."""
    report = copy.deepcopy(genuine["reference_report"])
    report["settings"]["impl"] = "learner"
    for case in report["cases"]:
        triton = next(v for v in case["variants"] if v["name"] == "triton")
        triton.update(name="learner", kind="learner")
    files = report["fingerprint"]["files"]
    for path in ("exercises/__init__.py", "exercises/kernels/__init__.py", LEARNER_KERNEL):
        files[path] = sha256_file(genuine["clone"] / path)
    alice = _grade(tmp_path, genuine, report)["alice"]
    reasons = _reasons(alice)
    assert "[claims-reference]" not in reasons  # the label says learner now
    assert (
        "[variants] add 16x256 float32: a run of these settings (impl learner) times torch, "
        in reasons
    )
    assert "this case has torch, learner: missing triton" in reasons
    assert alice.report_points == 0


def test_a_dropped_engine_file_is_caught(tmp_path, genuine):
    report = copy.deepcopy(genuine["report"])
    del report["fingerprint"]["files"]["learning/bench/timers.py"]
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert (
        "[fingerprint-incomplete] engine files every kernel-bench run loads are missing: "
        "learning/bench/timers.py" in _reasons(alice)
    )


def test_a_dropped_learner_helper_is_caught(tmp_path, genuine):
    """A helper module of the learner's own that the graded kernel imports, submitted but not
    in the fingerprint: nothing of the release's names it."""
    report = copy.deepcopy(genuine["report"])
    edit = {LEARNER_KERNEL: "from . import my_plan  # noqa: F401\n",
            "exercises/kernels/my_plan.py": "\n# x\n"}  # fmt: skip
    grades = _grade(tmp_path, genuine, report, edit=edit)
    assert (
        "[fingerprint-incomplete] exercises/kernels/my_plan.py: the graded kernel imports it "
        "(in the submitted files), but the fingerprint does not name it"
        in _reasons(grades["alice"])
    )


def test_a_fingerprint_of_the_op_spec_alone_is_caught(tmp_path, genuine):
    report = copy.deepcopy(genuine["report"])
    files = report["fingerprint"]["files"]
    report["fingerprint"]["files"] = {"learning/ops/spec.py": files["learning/ops/spec.py"]}
    reasons = _reasons(_grade(tmp_path, genuine, report)["alice"])
    assert "[fingerprint-incomplete] engine files every kernel-bench run loads are missing: " in (
        reasons
    )
    assert "[fingerprint-incomplete] reference files the measured cases load are missing: " in (
        reasons
    )
    assert f"[fingerprint-incomplete] {LEARNER_KERNEL}: the graded kernel imports it" in reasons


def test_a_helper_loaded_with_exec_is_caught(tmp_path, genuine):
    """add.py runs a helper's source with exec(): the helper is in no fingerprint."""
    source = (genuine["clone"] / LEARNER_KERNEL).read_text()
    loader = (
        "\nimport pathlib\n"
        "exec(pathlib.Path(__file__).with_name('fast_helper.txt').read_text())\n"
    )
    report = copy.deepcopy(genuine["report"])
    report["fingerprint"]["files"][LEARNER_KERNEL] = hashlib.sha256(
        (source + loader).encode()
    ).hexdigest()  # as a run of the edited kernel fingerprints it
    grades = _grade(
        tmp_path,
        genuine,
        report,
        edit={LEARNER_KERNEL: loader, "exercises/kernels/fast_helper.txt": "x = 1\n"},
    )
    assert (
        f"[dynamic-code] {LEARNER_KERNEL}:{source.count(chr(10)) + 3}: exec(...): code loaded "
        "dynamically: no fingerprint can cover it" in _reasons(grades["alice"])
    )


def test_a_cpu_report_that_records_a_gpu_is_caught(tmp_path, genuine):
    report = copy.deepcopy(genuine["report"])
    report["environment"]["gpu_name"] = "NVIDIA H200"
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert "[settings] a CPU run does not read the GPU, but this one records gpu_name" in (
        _reasons(alice)
    )


def test_a_learner_kernel_that_failed_the_gate_earns_no_report_points(tmp_path, genuine):
    """A valid report of a kernel that failed its oracle check: nothing tampered, no points."""
    report = copy.deepcopy(genuine["report"])
    for case in report["cases"]:
        learner = next(v for v in case["variants"] if v["kind"] == "learner")
        learner.update(
            status="failed", reason="failed the float64 oracle: output: 3 of 4096 values outside",
            samples_ms=[], median_ms=None, min_ms=None, max_ms=None, logical_gbps=None,
            tflops=None, ratio_vs_eager=None, paired_vs_eager=None,
        )  # fmt: skip
        learner["correctness"].update(passed=False, tolerance_used=3.5, reason="outside")
    alice = _grade(tmp_path, genuine, report)["alice"]
    assert "[learner-untimed] add 16x256 float32: your kernel was failed, not timed" in (
        _reasons(alice)
    )
    assert alice.report_points == 0


# --------------------------------------------------------------------------- robustness


def test_a_deeply_nested_report_is_one_finding_and_the_class_is_graded(tmp_path, genuine):
    """100,000 nested arrays would raise RecursionError in json.loads: one finding instead."""
    submissions = tmp_path / "submissions"
    good = tmp_path / "add.json"
    good.write_text(json.dumps(genuine["report"]))
    submit(genuine["clone"], submissions, "alice", [good])
    folder = submit(genuine["clone"], submissions, "mallory", [])
    (folder / "reports" / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    output = tmp_path / "grades.csv"
    argv = [str(submissions), "--output", str(output), "--release", str(genuine["release"])]
    assert grade_main([*argv, "--exercise", "tensors"]) == 0
    rows = {row["learner"]: row for row in csv.DictReader(output.open())}
    assert "reports/deep.json: [unreadable] the report nests 100000 levels deep" in (
        rows["mallory"]["reasons"]
    )
    assert rows["alice"]["reports_trusted"] == "1"


def test_a_huge_report_is_one_finding_read_no_further(tmp_path, genuine):
    submissions = tmp_path / "submissions"
    folder = submit(genuine["clone"], submissions, "mallory", [])
    with open(folder / "reports" / "huge.json", "wb") as handle:
        handle.truncate(200 * 10**6)  # 200 MB, sparse: nothing is written to disk
    mallory = grade_submissions(submissions, release_root=genuine["release"], exercises=())[0]
    assert mallory.reasons() == [
        "reports/huge.json: [unreadable] the report is 200.0 MB, above the grader's limit of "
        "20 MB; kernel-bench reports are far smaller"
    ]
