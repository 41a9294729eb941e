"""Does the paired_speedup check pass the reference, and name each usual mistake on any input?

Each mistaken solution is ``reference/measurement.py`` with a line or two of ``paired_speedup``
changed, written into a throwaway package under ``tmp_path`` and loaded as the checker loads a
learner's ``exercises`` package. The check runs on several seeds: its inputs are fresh every
run, and the hint must name the mistake on all of them.
"""

from __future__ import annotations

import itertools
import random
import sys
from pathlib import Path

import pytest

from learning.check import measurement
from learning.check.remote import Session
from learning.report.stats import paired
from reference.measurement import PairedSpeedup, paired_speedup

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "reference" / "measurement.py"
SEEDS = range(8)
_counter = itertools.count()

sys.path.insert(0, str(ROOT / "scripts"))
import make_exercises  # noqa: E402


@pytest.fixture
def sessions():
    """The worker sessions a test opened, closed when it ends."""
    opened: list[Session] = []
    yield opened
    for session in opened:
        session.close()


def _learner(tmp_path: Path, sessions, source: str) -> measurement.Learner:
    """``source`` as ``<impl>.measurement`` under ``tmp_path``, loaded as the checker loads it:
    in a worker process of its own, called through it."""
    impl = f"paired_learner_{next(_counter)}"
    (tmp_path / impl).mkdir()
    (tmp_path / impl / "__init__.py").write_text("")
    (tmp_path / impl / "measurement.py").write_text(source)
    session = Session("measurement", impl, extra_path=[tmp_path])
    sessions.append(session)
    learner = measurement.load(impl, session)
    assert isinstance(learner, measurement.Learner), learner
    return learner


def _mistake(*changes: tuple[str, str]) -> str:
    source = REFERENCE.read_text()
    for old, new in changes:
        assert source.count(old) == 1, f"{old!r} must occur once in reference/measurement.py"
        source = source.replace(old, new)
    return source


def _failure(learner: measurement.Learner, seed: int) -> str:
    """The check's message on ``seed``'s inputs; the test fails if the check passes."""
    with pytest.raises(measurement.Failed) as failed:
        measurement.check_paired_speedup(learner, random.Random(seed))
    return str(failed.value)


def test_the_reference_passes_on_every_seed(tmp_path, sessions):
    """Does the reference pass the check, worked example, random rounds and refusals alike?"""
    learner = _learner(tmp_path, sessions, REFERENCE.read_text())
    for seed in range(50):
        measurement.check_paired_speedup(learner, random.Random(seed))


def test_the_untouched_stub_fails_with_its_todo(tmp_path, sessions):
    """Does the stub as made fail with 'not written yet' and the TODO's teaching line?"""
    stub = make_exercises.render()["exercises/measurement.py"].decode()
    message = _failure(_learner(tmp_path, sessions, stub), seed=0)
    assert "`paired_speedup`" in message and "is not written yet" in message
    assert "one ratio per round (zip), their median with summarize" in message


PAIRS = "    pairs = list(zip(baseline_samples_ms, candidate_samples_ms, strict=True))\n"
RATIOS = "ratios = [baseline / candidate for baseline, candidate in pairs]"
SLOWER = "slower = sum(candidate > baseline for baseline, candidate in untied)"
MEDIAN = "median = summarize(ratios).median_ms"
RETURN = "return PairedSpeedup(speedup=median, slower=slower, rounds=len(untied))"

MISTAKES = {
    "inverted": (
        [(RATIOS, "ratios = [candidate / baseline for baseline, candidate in pairs]")],
        "inverted: each round's ratio is baseline / candidate",
    ),
    "sorted before pairing": (
        [(PAIRS, "    pairs = list(zip(sorted(baseline_samples_ms), "
                 "sorted(candidate_samples_ms)))\n")],
        "the pairs were broken",
    ),
    "ratio of medians": (
        [(MEDIAN, "median = summarize(baseline_samples_ms).median_ms "
                  "/ summarize(candidate_samples_ms).median_ms")],
        "that is the ratio of the two medians",
    ),
    "mean of ratios": (
        [(MEDIAN, "median = sum(ratios) / len(ratios)")],
        "that is the mean of the round-by-round ratios",
    ),
    "ties left out of the median": (
        [(MEDIAN, "median = summarize([b / c for b, c in untied]).median_ms")],
        "a tie is a ratio of exactly 1 and stays in the median",
    ),
    "upper middle for an even count": (
        [(MEDIAN, "median = sorted(ratios)[len(ratios) // 2]")],
        "the median is the mean of the two middle ratios",
    ),
    "ties counted in rounds": (
        [(RETURN, "return PairedSpeedup(speedup=median, slower=slower, rounds=len(pairs))")],
        "rounds counts the rounds that were not ties",
    ),
    "ties counted as losses": (
        [(SLOWER, "slower = sum(candidate >= baseline for baseline, candidate in pairs)")],
        "a tie (two equal samples) is not a loss",
    ),
    "wins counted": (
        [(SLOWER, "slower = sum(candidate < baseline for baseline, candidate in untied)")],
        "that counts the rounds the candidate won",
    ),
    "caller's lists reordered": (
        [(PAIRS, "    baseline_samples_ms.sort()\n    candidate_samples_ms.sort()\n" + PAIRS)],
        "leave the caller's lists as they were",
    ),
    "the worked answer, whatever the input": (
        [(RETURN, "return PairedSpeedup(2.0, 1, 4)")],
        "the worked example's answer",
    ),
    "unequal lengths paired": (
        [("    if len(baseline_samples_ms) != len(candidate_samples_ms):\n", "    if False:\n"),
         ("candidate_samples_ms, strict=True))", "candidate_samples_ms))")],
        "lists of different lengths cannot be paired",
    ),
    "empty lists answered": (
        [('raise ValueError("no samples")\n    if min(',
          'return PairedSpeedup(1.0, 0, 0)\n    if min(')],
        "no rounds, no median: raise ValueError",
    ),
    "samples not checked": (
        [("    if min(*baseline_samples_ms, *candidate_samples_ms) <= 0:\n", "    if False:\n")],
        "a sample of 0 ms or less is not a time",
    ),
}


@pytest.mark.parametrize("name", MISTAKES)
def test_each_mistake_fails_with_its_hint(name, tmp_path, sessions):
    """Does the check fail each mistaken version, naming that mistake, on every seed?"""
    changes, hint = MISTAKES[name]
    learner = _learner(tmp_path, sessions, _mistake(*changes))
    for seed in SEEDS:
        message = _failure(learner, seed)
        assert "input:    paired_speedup(" in message and "expected: " in message, message
        assert hint in message, f"seed {seed}: {message}"


def test_a_refused_input_shows_what_came_back_instead(tmp_path, sessions):
    """Does a missing refusal say ValueError was expected, and what the function did instead?"""
    changes, _ = MISTAKES["samples not checked"]
    message = _failure(_learner(tmp_path, sessions, _mistake(*changes)), seed=0)
    assert "expected: ValueError" in message
    assert "got:      it returned PairedSpeedup(" in message


def test_the_random_rounds_separate_the_ratio_of_medians_from_the_paired_one():
    """Do the drawn samples share a drift that makes the two ratios differ by over 1%?"""
    for seed in range(30):
        rng = random.Random(seed)
        count = rng.randint(9, 16)
        baseline, candidate = measurement.paired_samples(rng, count)
        assert len(baseline) == len(candidate) == count
        result = paired_speedup(baseline, candidate)
        middle = sorted(baseline)[count // 2], sorted(candidate)[count // 2]
        if count % 2 == 0:
            lower = sorted(baseline)[count // 2 - 1], sorted(candidate)[count // 2 - 1]
            middle = tuple((a + b) / 2 for a, b in zip(middle, lower, strict=True))
        assert abs(middle[0] / middle[1] / result.speedup - 1) > 0.01
        assert 0 < result.rounds < count, "one or two rounds tie"


def _random_rounds(rng: random.Random) -> tuple[list[float], list[float]]:
    count = rng.randint(1, 20)
    baseline = [round(rng.uniform(0.01, 3.0), 3) for _ in range(count)]
    candidate = [round(rng.uniform(0.01, 3.0), 3) for _ in range(count)]
    for tie in rng.sample(range(count), rng.randint(0, count)):
        candidate[tie] = baseline[tie]
    return baseline, candidate


def test_the_reference_agrees_with_the_engines_paired_ratio():
    """Do reference.measurement.paired_speedup and learning.report.stats.paired read the same
    speedup, slower and rounds from random samples (ties included), and refuse the same ones?"""
    rng = random.Random(7)
    for _ in range(500):
        baseline, candidate = _random_rounds(rng)
        ours = paired_speedup(baseline, candidate)
        engine = paired({"samples_ms": candidate}, {"samples_ms": baseline})
        assert isinstance(ours, PairedSpeedup)
        assert ours.speedup == pytest.approx(engine["paired_ratio"], rel=1e-12)
        assert (ours.slower, ours.rounds) == (engine["slower"], engine["rounds"])
    for baseline, candidate in [([1.0, 2.0], [1.0]), ([], []), ([1.0, 0.0], [1.0, 1.0]),
                                ([1.0, 2.0], [1.0, -2.0])]:  # fmt: skip
        assert paired({"samples_ms": candidate}, {"samples_ms": baseline}) is None
        with pytest.raises(ValueError):
            paired_speedup(baseline, candidate)


def test_the_reference_leaves_the_callers_lists_alone():
    baseline, candidate = [3.0, 1.0, 2.0], [2.0, 1.5, 2.0]
    assert paired_speedup(baseline, candidate) == PairedSpeedup(1.0, slower=1, rounds=2)
    assert (baseline, candidate) == ([3.0, 1.0, 2.0], [2.0, 1.5, 2.0])
