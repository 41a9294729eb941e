"""Verdicts in every report: intervals against a margin, throttled rounds left out, sampling
until the noise is low, and shapes routed by rank in a mixed group.

The throttle rule is tested on scripted telemetry rows (a CPU has no NVML); the engine's
telemetry path is exercised with a fake reader, and the rows each round gets are scripted, so
which rounds ran "throttled" is the test's choice, not the machine's.
"""

from __future__ import annotations

import copy
import itertools
import sys

import pytest

import learning.report
from learning.bench import BenchInputError, run, telemetry
from learning.bench.compare import within_report
from learning.bench.config import MAX_SAMPLES, select
from learning.report import telemetry as rule
from learning.report.stats import MIN_ROUNDS, paired_verdict

POWER_CAP, IDLE = 0x4, 0x1


# --------------------------------------------------------------------------- the throttle rule


def test_a_round_is_flagged_by_a_throttle_reason_or_a_low_clock_and_not_by_idle():
    rows = [
        [1980, 2619, 400.0, 50, 0],  # clean
        [1980, 2619, 700.0, 60, POWER_CAP],  # at the power limit
        [1500, 2619, 300.0, 50, 0],  # below 0.85 x 1980
        [1980, 2619, 90.0, 40, IDLE],  # idle is a state, not throttling
        None,  # no reading at all
    ]
    assert rule.flagged_rounds(rows, 1980.0) == [1, 2]
    assert rule.flagged_rounds(rows, None) == [1]  # no reference clock: reasons only
    cases = [{"telemetry": {"rounds": rows, "flagged": []}}, {"op": "no telemetry"}]
    assert rule.reference_clock(cases) == 1980


def test_flagged_rounds_are_left_out_unless_kept_or_too_few_would_remain():
    case = {"telemetry": {"rounds": [[1980, 0, 0, 0, 0]] * 8, "flagged": [0, 3]}}
    assert rule.excluded_rounds(case, keep_throttled=False) == ([0, 3], None)
    assert rule.excluded_rounds(case, keep_throttled=True) == ([], "--keep-throttled")
    few = {"telemetry": {"rounds": [[1980, 0, 0, 0, 0]] * MIN_ROUNDS, "flagged": [1]}}
    assert rule.excluded_rounds(few, keep_throttled=False)[0] == []
    assert rule.excluded_rounds({"op": "cpu"}, keep_throttled=False) == ([], None)


def test_a_round_row_summarises_its_readings_or_takes_the_nearest():
    sampler = telemetry.Sampler(read=None)
    sampler.times = [1.0, 2.0, 3.0, 10.0]
    sampler.readings = [(1900, 2600, 500.0, 55, 0), (1700, 2500, 650.0, 58, POWER_CAP),
                        (1800, 2600, 600.0, 57, 0x20), (1980, 2619, 100.0, 40, 0)]  # fmt: skip
    assert sampler.round_row(0.5, 3.5) == [1700, 2500, 650.0, 58, POWER_CAP | 0x20]
    assert sampler.round_row(9.0, 9.1) == [1980, 2619, 100.0, 40, 0]  # nearest: t = 10
    assert sampler.round_row(3.1, 3.2) == [1800, 2600, 600.0, 57, 0x20]  # nearest: t = 3
    assert telemetry.Sampler(read=None).round_row(0, 1) is None


def test_the_sampler_reads_in_a_thread_until_stopped():
    readings = itertools.count()
    sampler = telemetry.Sampler(read=lambda: (next(readings), 1, 2.0, 3, 0), interval_s=0.001)
    sampler.start()
    import time

    time.sleep(0.05)
    sampler.stop()
    count = len(sampler.readings)
    assert count >= 5 and sampler.times == sorted(sampler.times)
    time.sleep(0.01)
    assert len(sampler.readings) == count, "it read on after stop()"


# --------------------------------------------------------------------------- in a CPU run

# Per round: which one ran at the power limit (rounds 0 and 3 of 8).
THROTTLED = {0, 3}


@pytest.fixture
def throttled_report(make_impl, small_config, monkeypatch):
    """A CPU run with a fake NVML whose rows say rounds 0 and 3 ran at the power cap."""
    fake = telemetry.Sampler(read=lambda: (1980, 2619, 400.0, 50, 0), interval_s=0.001)
    monkeypatch.setattr(telemetry.Sampler, "for_device", classmethod(lambda cls, device: fake))
    rounds = itertools.count()

    def scripted_row(self, start, end):
        index = next(rounds)
        return [1980, 2619, 400.0, 50, POWER_CAP if index in THROTTLED else 0]

    monkeypatch.setattr(telemetry.Sampler, "round_row", scripted_row)

    def make(**changes):
        config = small_config(reference_package=make_impl(), samples=8, visits=2, force=True,
                              **changes)  # fmt: skip
        return run(config).data

    return make


def test_throttled_rounds_are_flagged_counted_and_left_out_of_the_verdicts(throttled_report):
    report = throttled_report()
    (case,) = report["cases"]
    assert case["telemetry"]["flagged"] == sorted(THROTTLED)
    assert report["telemetry"]["flagged_rounds"] == 2 == report["telemetry"]["excluded_rounds"]
    assert report["telemetry"]["throttle_reasons_seen"] == ["software power cap"]
    triton = next(v for v in case["variants"] if v["name"] == "triton")
    versus = triton["paired_vs_eager"]
    assert versus["excluded_rounds"] == 2 and versus["rounds"] <= 6
    eager = next(v for v in case["variants"] if v["name"] == case["eager_variant"])
    kept = [i for i in range(8) if i not in THROTTLED]
    alone = {"samples_ms": [triton["samples_ms"][i] for i in kept]}
    eager_kept = {"samples_ms": [eager["samples_ms"][i] for i in kept]}
    assert versus["paired_ratio"] == pytest.approx(
        paired_verdict(alone, eager_kept)["paired_ratio"]
    )
    assert learning.report.validate(report) == []
    kept_whole = throttled_report(keep_throttled=True)
    versus = next(v for v in kept_whole["cases"][0]["variants"] if v["name"] == "triton")
    assert versus["paired_vs_eager"]["excluded_rounds"] == 0
    assert kept_whole["telemetry"]["excluded_rounds"] == 0
    assert learning.report.validate(kept_whole) == []


def _tampered(report: dict, change) -> list[str]:
    edited = copy.deepcopy(report)
    change(edited)
    return learning.report.validate(edited)


def test_a_verdict_or_a_throttle_flag_edited_by_hand_is_caught(throttled_report):
    report = throttled_report()

    def triton(r):
        return next(v for v in r["cases"][0]["variants"] if v["name"] == "triton")

    def unflag(r):  # claim the throttled rounds were clean
        r["cases"][0]["telemetry"]["flagged"] = []

    def clean_rows(r):  # and the readings too: then the verdicts must change with them
        for row in r["cases"][0]["telemetry"]["rounds"]:
            row[4] = 0
        r["cases"][0]["telemetry"]["flagged"] = []

    def faster(r):
        triton(r)["paired_vs_eager"]["verdict"] = "faster"

    def narrower(r):
        interval = triton(r)["paired_vs_eager"]["paired_ratio_ci"]
        interval[0] = interval[1] = 1.0

    def verdict_on_a_baseline(r):
        eager = next(v for v in r["cases"][0]["variants"] if v["kind"] == "eager")
        eager["paired_vs"] = {"triton": triton(r)["paired_vs_eager"]}

    for change, words in ((unflag, "telemetry flags"), (clean_rows, "round by round"),
                          (faster, "paired_vs_eager"), (narrower, "paired_vs_eager"),
                          (verdict_on_a_baseline, "paired_vs on a baseline")):  # fmt: skip
        problems = _tampered(report, change)
        assert problems and any(words in p for p in problems), (change.__name__, problems)


def test_compare_within_agrees_with_the_verdicts_the_report_keeps(make_impl, small_config):
    report = run(small_config(reference_package=make_impl(), samples=8, visits=2)).data
    pairs = {row["variant"]: row for row in within_report(report)["pairs"]}
    for variant in report["cases"][0]["variants"]:
        recorded = variant["paired_vs_eager"]
        if recorded is None:
            continue
        row = pairs[variant["name"]]
        assert row["verdict"] == recorded["verdict"]
        assert row["paired_ratio_ci"] == pytest.approx(recorded["paired_ratio_ci"])


# --------------------------------------------------------------------------- --max-noise


def test_max_noise_stops_at_once_when_the_samples_are_quiet_enough(make_impl, small_config):
    report = run(small_config(reference_package=make_impl(), max_noise=1e6)).data
    (case,) = report["cases"]
    assert case["sampling"]["converged"] is True
    assert {len(v["samples_ms"]) for v in case["variants"] if v["status"] == "timed"} == {4}
    assert learning.report.validate(report) == []


def test_max_noise_samples_on_until_its_time_is_up_and_says_it_did_not_converge(
    make_impl, small_config
):
    report = run(
        small_config(reference_package=make_impl(), max_noise=1e-9, max_seconds=0.5)
    ).data
    (case,) = report["cases"]
    counts = {len(v["samples_ms"]) for v in case["variants"] if v["status"] == "timed"}
    assert case["sampling"]["converged"] is False and len(counts) == 1
    count = counts.pop()
    assert 4 < count <= MAX_SAMPLES
    # it stopped because its time was up or its variants held as many samples as allowed
    assert case["sampling"]["extra_seconds"] >= 0.5 or count > MAX_SAMPLES - 2
    assert report["settings"]["max_noise"] == 1e-9
    assert learning.report.validate(report) == []
    forged = copy.deepcopy(report)
    forged["cases"][0]["sampling"]["converged"] = True
    assert any("converged" in p for p in learning.report.validate(forged))


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"min_samples": 5}, "--min-samples needs --max-noise"),
        ({"max_noise": 0}, "--max-noise must be a positive percentage"),
        ({"max_noise": 1.0, "min_samples": 1}, "--min-samples must be an integer from 2"),
        ({"margin": 0}, "--margin must be a percentage"),
        ({"max_seconds": -1}, "--max-seconds must be a positive number"),
    ],
)
def test_bad_sampling_settings_are_one_line_errors(small_config, changes, words):
    with pytest.raises(BenchInputError, match=words):
        run(small_config(**changes))


# --------------------------------------------------------------------------- mixed ranks


def test_a_mixed_group_gives_each_op_the_shapes_of_its_rank(small_config):
    both = select(small_config(op="all", shapes=((64, 128), (32, 16, 8)), dtype=None), "cpu")
    shapes = {(spec.name, shape) for spec, shape, _ in both}
    assert ("softmax", (64, 128)) in shapes and ("matmul", (32, 16, 8)) in shapes
    assert not any(spec.is_gemm and len(shape) == 2 for spec, shape, _ in both)
    with pytest.raises(BenchInputError, match=r"matmul takes 3 \(MxNxK\)"):
        select(small_config(op="all", shapes=((64, 128),), dtype=None), "cpu")
    with pytest.raises(BenchInputError, match="softmax takes 2"):
        select(small_config(op="all", shapes=((8, 8, 8),), dtype=None), "cpu")


# --------------------------------------------------------------------------- the tamper watch


def test_compiling_does_not_read_as_tampering():
    """torch._dynamo wraps torch.manual_seed when first imported; a compiled run's watch starts
    after that import, so the wrapping is not reported as a change."""
    from learning.bench import tamper

    snapshot = tamper.Snapshot(compiling=True)
    assert "torch._dynamo" in sys.modules
    assert snapshot.changes() == []
