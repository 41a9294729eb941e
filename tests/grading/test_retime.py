"""Does ``--retime`` catch what no check of the file can: a consistent rescale of the learner's
samples, every figure recomputed to agree?

Two learners submit the same finished add kernel. Alice's report is genuine; Bob's is the same
run with his kernel's samples divided by ten and every derived figure recomputed, so that the
report agrees with itself and claims a kernel ten times as fast as it ran. Without
``--retime`` both are trusted; with it, the grader's own kernel-bench run of each submission
(one tiny op and shape on the CPU) shows Bob's claim to be false.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import statistics
import time
from pathlib import Path

import pytest
from own_work import own_solution  # the learner's own add kernel, not the reference's

from learning.grade import grade_submissions
from learning.grade.cli import main as grade_main
from learning.grade.clone import make_clone, run_bench, submit
from learning.grade.retime import RetimeOptions, bench_arguments, bench_seed
from learning.report.verdicts import verdicts

KERNEL = "exercises/kernels/add.py"
BENCH = ["--op", "add", "--shape", "16", "256", "--dtype", "float32", "--samples", "3",
         "--visits", "1", "--impl", "learner", "--device", "cpu"]  # fmt: skip
# One pytest-xdist worker grades the class every test here reads (a module fixture).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("retime")]


def _rescaled(report: dict, factor: float) -> dict:
    report = copy.deepcopy(report)
    for case in report["cases"]:
        eager = next(v for v in case["variants"] if v["name"] == case["eager_variant"])
        for variant in case["variants"]:
            if variant["kind"] != "learner":
                continue
            samples = [s * factor for s in variant["samples_ms"]]
            median = statistics.median(samples)
            variant.update(
                samples_ms=samples, median_ms=median, min_ms=min(samples), max_ms=max(samples),
                logical_gbps=case["logical_bytes"] / (median * 1e6),
                tflops=case["flops"] / (median * 1e9), ratio_vs_eager=eager["median_ms"] / median,
            )  # fmt: skip
        judged = verdicts(case, report["settings"])  # every interval and verdict, re-derived
        for variant in case["variants"]:
            variant.update(judged[variant["name"]])
    return report


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> dict:
    work = tmp_path_factory.mktemp("retime")
    release = make_clone(work / "release")
    solved = work / "add.py"
    solved.write_bytes(own_solution(KERNEL, release))
    clone = make_clone(work / "clone", release, {KERNEL: solved})
    genuine = json.loads(run_bench(clone, BENCH, work / "add.json").read_text())
    submissions = work / "class"
    for learner, report in (("alice", genuine), ("bob", _rescaled(genuine, 0.1))):
        path = work / f"{learner}.json"
        path.write_text(json.dumps(report))
        submit(clone, submissions, learner, [path])
    started = time.perf_counter()
    output = work / "grades.csv"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stdin", io.StringIO("5"))
        status = grade_main([str(submissions), "--output", str(output), "--release",
                             str(release), "--exercise", "tensors", "--retime", "--seed-stdin",
                             "--retime-dir", str(work / "retimed")])  # fmt: skip
    elapsed = time.perf_counter() - started
    assert status == 0
    rows = {row["learner"]: row for row in csv.DictReader(output.open())}
    return {"rows": rows, "release": release, "submissions": submissions, "work": work,
            "elapsed": elapsed}  # fmt: skip


def test_without_retime_the_rescaled_report_is_trusted(graded):
    grades = grade_submissions(graded["submissions"], release_root=graded["release"], exercises=())
    assert all(grade.reasons() == [] for grade in grades)


def test_retime_catches_the_rescaled_report(graded):
    bob = graded["rows"]["bob"]
    assert bob["reports_trusted"] == "0" and bob["report_points"] == "0"
    assert "[retime] add 16x256 float32: the report has your kernel at " in bob["reasons"]
    assert "the reference kernel's speed; the instructor's run measured" in bob["reasons"]
    assert "(more than 3x apart)" in bob["reasons"]  # the interpreter's tolerance


def test_retime_trusts_the_genuine_report(graded):
    alice = graded["rows"]["alice"]
    assert alice["reports_trusted"] == "1" and "[retime]" not in alice["reasons"], alice["reasons"]


def test_the_instructors_runs_are_kept_with_a_seed_hashed_from_the_instructors(graded):
    """kernel-bench puts its seed on its command line and hands it to the learner's process:
    it gets a hash of the instructor's seed, the same on a replay, never the seed itself."""
    kept = json.loads((graded["work"] / "retimed" / "alice" / "alice.json").read_text())
    assert kept["settings"]["seed"] == bench_seed(5) != 5
    assert kept["settings"]["impl"] == "learner"
    print(f"\n--retime: 2 learners graded in {graded['elapsed']:.1f} s")


def test_a_gpu_report_is_not_retimed_on_a_cpu():
    from learning.grade.retime import _retime_one

    class Verdict:
        data = {"settings": {"device": "cuda"}}
        path = "reports/x.json"

    options = RetimeOptions(seed=1)
    [finding] = _retime_one(Verdict(), Path("."), Path("."), 0, "cpu", options, "alice")
    assert finding.review and "not re-timed: a cuda report" in finding.message


def test_the_retime_command_asks_for_the_reports_cases_with_the_instructors_seed():
    settings = {"op": "softmax", "shapes": [[64, 128]], "dtype": "float16", "compile": True,
                "compile_mode": "max-autotune", "requested_timing": "graph", "timing": "graph",
                "cache": "cold", "flush": "write", "clock_burst": "on", "samples": 9,
                "visits": 3, "seed": 0}  # fmt: skip
    words = bench_arguments(settings, seed=99, device="cuda")
    from learning.bench import cli

    config = cli.parse([*words, "--output", "x.json"])
    assert (config.op, config.shapes, config.dtype, config.compile_mode) == (
        "softmax", ((64, 128),), "float16", "max-autotune")  # fmt: skip
    assert (config.cache, config.flush, config.clock_burst, config.seed, config.impl) == (
        "cold", "write", "on", 99, "learner")  # fmt: skip
