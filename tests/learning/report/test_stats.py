"""Do the paired statistics (``learning.report.stats``) compare two variants round by round?"""

from __future__ import annotations

import math

import pytest

from learning.report.stats import paired, sign_test_p


def _samples(*milliseconds):
    return {"samples_ms": list(milliseconds)}


@pytest.mark.parametrize(
    "slower, rounds, p",
    [
        (5, 5, 2 / 2**5),  # every round one way: 2 x (1/32)
        (0, 5, 2 / 2**5),  # two-sided: every round the other way is as lopsided
        (1, 5, 2 * (1 + 5) / 2**5),  # 0 or 1 of 5, either way: 2 x 6/32 = 0.375
        (2, 5, 1.0),  # 2 x (1 + 5 + 10)/32 = 1: as even as 5 rounds can be
        (15, 15, 2 / 2**15),  # the module's "15 of 15: p = 0.00006"
        (12, 15, 2 * (1 + 15 + 105 + 455) / 2**15),
        (8, 15, 1.0),
        (0, 0, 1.0),  # no untied rounds: no evidence either way
    ],
)
def test_the_sign_test_counts_how_lopsided_the_rounds_are(slower, rounds, p):
    assert math.isclose(sign_test_p(slower, rounds), p, rel_tol=1e-12), (
        f"{slower} slower of {rounds} rounds: expected p = {p}, the two-sided binomial tail"
    )


def test_the_docstrings_examples_hold():
    assert f"{sign_test_p(15, 15):.5f}" == "0.00006"
    assert f"{sign_test_p(9, 15):.1f}" == "0.6"


def test_a_steady_loss_under_drift_is_slower_in_every_round():
    """The baseline drifts from 10 to 50 ms; the variant is 1% slower in each round. The two
    sets of samples overlap almost entirely, yet every round says the same thing."""
    baseline = _samples(10.0, 20.0, 30.0, 40.0, 50.0)
    variant = _samples(10.1, 20.2, 30.3, 40.4, 50.5)
    result = paired(variant, baseline)
    assert set(result) == {"paired_ratio", "slower", "rounds", "p"}
    assert (result["slower"], result["rounds"]) == (5, 5)
    assert math.isclose(result["paired_ratio"], 1 / 1.01, rel_tol=1e-12)
    assert math.isclose(result["p"], 2 / 2**5, rel_tol=1e-12)


def test_a_faster_variant_has_a_ratio_above_one_like_ratio_vs_eager():
    result = paired(_samples(1.0, 2.0, 1.1, 2.5), _samples(2.0, 4.0, 1.0, 5.0))
    # per round baseline / variant: 2, 2, 1/1.1, 2 -> median 2; slower only in round 3
    assert result == {"paired_ratio": 2.0, "slower": 1, "rounds": 4, "p": 2 * (1 + 4) / 2**4}


def test_tied_rounds_are_left_out_of_the_count():
    """A tie says nothing about which is faster: it is in the ratio, not in the sign test."""
    result = paired(_samples(1.0, 1.0, 1.0, 2.0, 3.0), _samples(1.0, 1.0, 1.0, 1.0, 4.0))
    assert (result["slower"], result["rounds"]) == (1, 2), "3 of 5 rounds were ties"
    assert result["p"] == 1.0
    assert result["paired_ratio"] == 1.0  # ratios 1, 1, 1, 0.5, 4/3


@pytest.mark.parametrize(
    "variant, baseline, why",
    [
        (_samples(1.0, 2.0), _samples(1.0, 2.0, 3.0), "unequal counts: a run interrupted partway"),
        (_samples(1.0, 2.0, 3.0), _samples(1.0, 2.0), "unequal counts, the other way"),
        (_samples(), _samples(), "no samples"),
        ({}, _samples(1.0), "no samples_ms at all"),
        (_samples(1.0, 0.0), _samples(1.0, 1.0), "a zero sample: no ratio"),
        (_samples(1.0, 1.0), _samples(1.0, -0.001), "a negative cold-cache sample"),
    ],
)
def test_samples_that_cannot_be_paired_give_none(variant, baseline, why):
    assert paired(variant, baseline) is None, why

