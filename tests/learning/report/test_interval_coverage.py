"""Does a verdict's "95%" interval hold the true ratio in 95% of runs?

The rounds of one visit share its moment (clocks, temperature), so a run's per-round ratios
are not independent draws: they cluster by visit. An interval that treats rounds as
independent is too narrow whenever the ratio moves from visit to visit. This test simulates
runs of two kernels whose true ratio is 1, with the round-to-round noise of the recorded
sweeps and a visit effect from none to four times the round spread, and asks
``paired_verdict``'s interval to hold 1 in at least 93% of them at every setting the course
records (5 visits of 3 rounds, 3 of 3, 2 of 3). The same runs read as if every round were its
own visit (the old rule) fall short, which shows the simulation can tell the two apart.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from learning.report.stats import paired_verdict

ROOT = Path(__file__).resolve().parents[3]
RECORDED = ROOT / "results" / "h100" / "all.json"
RUNS = 1000
VISIT_EFFECTS = (0.0, 0.5, 1.0, 2.0, 4.0)  # the visit spread, in round spreads
SETTINGS = ((5, 3), (3, 3), (2, 3))  # (visits, rounds per visit) of the recorded sweeps
FLOOR = 0.93


def recorded_round_noise() -> np.ndarray:
    """The recorded sweep's round-to-round noise of the paired log-ratio (Triton against
    eager), each case's residuals from its visit means scaled to unit spread, and mirrored so
    the true median is 0."""
    report = json.loads(RECORDED.read_text())
    per_visit = report["settings"]["rounds_per_visit"]
    pooled = []
    for case in report["cases"]:
        variants = {v["name"]: v for v in case["variants"] if v["status"] == "timed"}
        triton, eager = variants.get("triton"), variants.get(case["eager_variant"])
        if triton is None or eager is None:
            continue
        logs = np.log(np.asarray(eager["samples_ms"]) / np.asarray(triton["samples_ms"]))
        visits = logs[: len(logs) // per_visit * per_visit].reshape(-1, per_visit)
        residuals = (visits - visits.mean(axis=1, keepdims=True)).ravel()
        spread = residuals.std() * math.sqrt(per_visit / (per_visit - 1))
        if spread > 0:
            pooled.append(residuals / spread)
    noise = np.concatenate(pooled)
    assert len(noise) > 1000, "the recorded sweep holds too few rounds to draw from"
    return np.concatenate([noise, -noise])


@pytest.fixture(scope="module")
def noise() -> np.ndarray:
    return recorded_round_noise()


def coverage(noise, visits: int, per_visit: int, effect: float, units_per_visit: int) -> float:
    """The share of simulated runs whose interval holds the true ratio 1 (``units_per_visit``:
    the rounds the interval takes as one visit; 1 reads every round as its own)."""
    rng = np.random.default_rng(visits * 100 + per_visit * 10 + int(effect * 10))
    held = 0
    for _ in range(RUNS):
        rounds = rng.choice(noise, size=(visits, per_visit))
        logs = (rounds + effect * rng.standard_normal((visits, 1))).ravel()
        baseline = {"samples_ms": list(np.exp(logs))}
        variant = {"samples_ms": [1.0] * len(logs)}
        low, high = paired_verdict(variant, baseline, rounds_per_visit=units_per_visit)[
            "paired_ratio_ci"]  # fmt: skip
        held += low <= 1.0 <= high
    return held / RUNS


@pytest.mark.slow
@pytest.mark.parametrize("visits,per_visit", SETTINGS)
def test_the_interval_holds_the_true_ratio_at_every_visit_effect(noise, visits, per_visit):
    found = {effect: coverage(noise, visits, per_visit, effect, per_visit)
             for effect in VISIT_EFFECTS}  # fmt: skip
    assert min(found.values()) >= FLOOR, found


@pytest.mark.slow
def test_rounds_read_as_independent_fall_short_once_visits_differ(noise):
    """The old rule, every round its own unit: too narrow when the visits move."""
    assert coverage(noise, 5, 3, 0.0, 1) >= FLOOR  # no visit effect: rounds are independent
    assert coverage(noise, 5, 3, 2.0, 1) < 0.85


def test_rederive_rewrites_only_the_verdicts_from_the_reports_own_samples(tmp_path, capsys):
    """A report whose verdicts an older rule derived: ``rederive`` puts back what today's rule
    gives, changes nothing else, and leaves an up-to-date report byte for byte alone."""
    from learning.report.__main__ import main

    path = tmp_path / "gemm-bf16.json"
    recorded = (ROOT / "results" / "h100" / "gemm-bf16.json").read_text()
    report = json.loads(recorded)
    triton = next(v for v in report["cases"][0]["variants"] if v["name"] == "triton")
    triton["paired_vs_eager"].update(paired_ratio_ci=[0.5, 0.6], verdict="slower")
    del triton["paired_vs_eager"]["interval_unit"]
    path.write_text(json.dumps(report, indent=1) + "\n")
    assert main(["rederive", str(path)]) == 0
    assert path.read_text() == recorded
    assert "1 verdicts rederived" in capsys.readouterr().out
    assert main(["rederive", str(path)]) == 0 and path.read_text() == recorded
    assert "unchanged" in capsys.readouterr().out
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert main(["rederive", str(broken)]) == 1
    assert broken.read_text() == "{not json"
