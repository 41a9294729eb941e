"""Points that need correctness: can a kernel that is wrong, or hangs, collect the points of
the properties ("runs your own Triton kernels", "leaves its inputs unchanged", "is
deterministic"), or the points of a path it gets wrong?

Each test grades a mutant of the reference softmax (``tests/mutants.py``) on a few of the
planned cases, always some of each path (the run's ``focus``: the shares of a path depend only
on which paths a run grades, :func:`learning.check.kernels.path_points`), and asserts both
what it earns and the reason its messages give. The shares are read from the checker, never
restated here.
"""

from __future__ import annotations

import random

import pytest
from mutants import SOFTMAX

import learning  # noqa: F401  (chooses the interpreter before triton is imported)
from learning import ops
from learning.check import kernels

SHARES = kernels.path_points("softmax")["softmax"]
ORDINARY, CHUNKED = SHARES[kernels.ORDINARY], SHARES["chunked rows"]
PROPERTIES = ("softmax runs your own Triton kernels", "softmax leaves its inputs unchanged",
              "softmax is deterministic")  # fmt: skip
ONLY_RIGHT = "a property counts only for kernels that compute the right result"


def grade(mutant: str, tmp_path, monkeypatch, *checks: str, keep=lambda case: True) -> dict:
    """The mutant's results on the planned cases of ``checks`` and of the chunked path (those
    that ``keep`` keeps)."""
    package = SOFTMAX[mutant].package(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    wanted = {f"softmax {check}" for check in (*checks, "chunked rows")}
    results = kernels.run("softmax", package, reference_copies=True, focus=lambda cases: [
        case for case in cases if case.check in wanted and keep(case)])  # fmt: skip
    named = {r.name: r for r in results}
    assert wanted <= set(named), f"no planned case of {sorted(wanted - set(named))}"
    return named


def earned(results: dict) -> float:
    return round(sum(r.earned for r in results.values()), 6)


def test_a_softmax_of_one_over_n_collects_no_property(tmp_path, monkeypatch):
    """Stores 1/N everywhere and never reads x: right on a row one column wide (the odd widths
    draw one; here it is that check's only case), wrong on every other. The properties once
    counted as soon as one input passed, which gave it 4 of 10 whenever the one-column case
    ran before its check's other case failed. Now only that check's own points remain (in a
    whole run its other case fails it too: nothing)."""
    results = grade("one_over_n", tmp_path, monkeypatch, "odd widths", "37x781",
                    keep=lambda case: case.check != "softmax odd widths" or case.shape[1] == 1)
    assert results["softmax odd widths"].passed and not results["softmax 37x781"].passed
    assert earned(results) == results["softmax odd widths"].max_points
    for name in PROPERTIES:
        assert results[name].earned == 0
        assert ONLY_RIGHT in results[name].message, results[name].message


def test_no_max_subtraction_fails_on_every_path(tmp_path, monkeypatch):
    """exp(x) without the row maximum, on both paths: right on ordinary inputs, so once only
    the x100 trap failed (9.5 of 10). Every case now has a call on inputs shifted by +100,
    where exp(x) overflows: every check fails, naming the shift and the fix."""
    results = grade("without_max", tmp_path, monkeypatch, "37x781")
    assert earned(results) == 0
    for check in ("softmax 37x781", "softmax chunked rows"):
        message = results[check].message
        assert "inputs of large magnitude: x shifted by +100" in message, message
        assert "subtract the row max" in message, message


def test_a_chunked_path_without_the_max_loses_its_share(tmp_path, monkeypatch):
    """Only the chunked kernel skips the maximum: no input of the chunked rows was large, so
    this passed everything. The shifted inputs reach the chunked path too."""
    results = grade("chunked_without_max", tmp_path, monkeypatch, "37x781")
    assert results["softmax 37x781"].passed
    message = results["softmax chunked rows"].message
    assert "x shifted by +100" in message and "subtract the row max" in message, message
    assert earned(results) == pytest.approx(ORDINARY.total)


def test_a_chunked_path_wrong_on_wide_rows_loses_its_whole_share(tmp_path, monkeypatch):
    """The chunked kernel's first pass reads only its first chunk: wrong on every row wider
    than one chunk, which once cost only the one chunked check (9.5 of 10). Its path's part of
    the properties goes with it."""
    results = grade("chunked_first_block", tmp_path, monkeypatch, "37x781")
    assert not results["softmax chunked rows"].passed
    assert earned(results) == pytest.approx(ORDINARY.total)
    for name in PROPERTIES:
        message = results[name].message
        assert "none for softmax's chunked rows path until every input check of it passes " \
               "(softmax chunked rows failed)" in message, message  # fmt: skip


def test_a_hang_costs_its_path_whole_share(tmp_path, monkeypatch):
    """The one-pass kernel never returns where a row fills its block (16x256), and is right
    elsewhere (37x781): the hang costs the one-pass path everything it would have earned, its
    right check included; the chunked path keeps its share."""
    per_second = kernels._CALL_LIMIT_S["cpu"][1]  # a short wait: 3 s, not 10, a call
    monkeypatch.setitem(kernels._CALL_LIMIT_S, "cpu", (3.0, per_second))
    results = grade("one_pass_hangs_on_full_blocks", tmp_path, monkeypatch, "16x256", "37x781")
    hung = results["softmax 16x256"].message
    assert "did not return within" in hung and "costs its whole path" in hung, hung
    right = results["softmax 37x781"]
    assert not right.passed and right.earned == 0
    assert right.message.startswith("right on every input of this check, but a call of "
                                    "softmax 16x256 did not return"), right.message
    assert earned(results) == pytest.approx(CHUNKED.total)


def test_a_missing_tail_mask_earns_no_properties_for_its_path(tmp_path, monkeypatch):
    """The one-pass load reads past each row's end: right only where a row fills its block
    (16x256). The one-pass path keeps that check's points and none of the properties'."""
    results = grade("without_tail_mask", tmp_path, monkeypatch, "16x256", "37x781")
    assert results["softmax 16x256"].passed and not results["softmax 37x781"].passed
    assert results["softmax chunked rows"].passed
    assert earned(results) == pytest.approx(
        results["softmax 16x256"].max_points + CHUNKED.total)
    for name in PROPERTIES:
        assert "none for softmax's ordinary path" in results[name].message


@pytest.mark.parametrize("exercise", ops.exercises())
def test_the_shares_of_the_paths_add_up_to_the_exercise(exercise):
    """Does every path carry a share, and do the shares add up to what the exercise is worth
    (whole tenths, so that a learner never reads 9.99 of 10)?"""
    shares = [s for paths in kernels.path_points(exercise).values() for s in paths.values()]
    assert all(s.checks > 0 and s.properties > 0 for s in shares), shares
    assert round(sum(s.total for s in shares), 6) == kernels.points_for(exercise)


def test_no_check_of_a_row_op_is_all_one_column_wide():
    """A softmax one column wide is 1.0 whatever the input, so a check whose every input is one
    column wide cannot tell a kernel that ignores x (1/N everywhere) from a right one: over
    many seeds, every check of the softmax plan has an input at least two columns wide."""
    spec = ops.OPS["softmax"]
    for seed in range(500):
        cases = kernels._plan(spec, random.Random(seed))
        for check in {case.check for case in cases}:
            widths = {case.shape[-1] for case in cases if case.check == check}
            assert widths != {1}, f"seed {seed}: {check} is one column wide only"
