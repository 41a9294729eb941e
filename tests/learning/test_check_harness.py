"""Lesson 17's check: does each cheat earn its point only when it is the cheat it claims?

Each learner file here is a package written into a pytest ``tmp_path`` and graded as
``python -m learning.check harness`` grades ``exercises``: every copy of it runs in a worker.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from stopwatch import Stopwatch  # a wall-clock limit scaled by the machine's pace

import learning  # noqa: F401  (chooses the interpreter before triton is imported)
from learning.check import harness
from learning.check.runner import check_exercise

REFERENCE = Path(__file__).resolve().parents[2] / "reference" / "harness.py"
EXERCISE = Path(__file__).resolve().parents[2] / "exercises" / "harness.py"
HEADER = REFERENCE.read_text(encoding="utf-8").split("# ---")[0]  # the kernel, no cheats


def grade(tmp_path: Path, body: str, impl: str | None = None) -> dict:
    package = impl or f"learner_{uuid.uuid4().hex[:8]}"
    if impl is None:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("import learning  # noqa: F401\n")
        (tmp_path / package / "harness.py").write_text(HEADER + "\n\n" + body)
    report = check_exercise("harness", package, extra_path=[tmp_path])
    return {check.name: check for check in report.checks}


def test_the_reference_cheats_earn_every_point_and_fast():
    """Is each of the reference's cheats caught, by the guard it claims, within the budget?"""
    with Stopwatch() as watch:
        report = check_exercise("harness", "reference")
    assert report.points == report.max_points, [c.message for c in report.checks]
    messages = {c.name: c.message for c in report.checks}
    assert "fresh outputs" in messages["reused_output"]
    assert ("repeat calls on refilled tensors" in messages["pointer_cache"]
            or "hidden-input replay of only your kernels" in messages["pointer_cache"])
    assert "the settled-output check" in messages["side_work"]
    assert watch.elapsed < watch.limit(60), watch.said(60)


def test_the_untouched_exercise_says_where_to_start(tmp_path):
    """Do the TODO stubs fail every check, each saying it is not done yet?"""
    (tmp_path / "untouched").mkdir()
    (tmp_path / "untouched" / "__init__.py").write_text("import learning  # noqa: F401\n")
    (tmp_path / "untouched" / "harness.py").write_text(EXERCISE.read_text(encoding="utf-8"))
    checks = grade(tmp_path, "", impl="untouched")
    assert list(checks) == [cheat.function for cheat in harness.CHEATS]
    for check in checks.values():
        assert not check.passed
        assert "not done yet" in check.message and "TODO" in check.message, check.message


HONEST = """
def reused_output(x):
    return honest_softmax(x)


def pointer_cache(x):
    return honest_softmax(x)


def side_work(x):
    return honest_softmax(x)
"""


def test_an_honest_kernel_in_each_slot_earns_nothing(tmp_path):
    """A correct softmax is accepted by the checker: it is no cheat, in any slot."""
    checks = grade(tmp_path, HONEST)
    assert sum(c.earned for c in checks.values()) == 0
    for check in checks.values():
        assert harness.HONEST in check.message, check.message


MIXED = """
import torch


@triton.jit
def _nothing_kernel(x_ptr):
    pass


def reused_output(x):  # PyTorch behind a token launch: caught by the replay, not by reuse
    _nothing_kernel[(1,)](x)
    return torch.softmax(x.float(), dim=-1).to(x.dtype)


def pointer_cache(x):  # simply wrong
    honest_softmax(x)
    return torch.zeros_like(x)


def side_work(x):  # the same PyTorch fallback is a side_work cheat: the replay catches it
    _nothing_kernel[(1,)](x)
    return torch.softmax(x.float(), dim=-1).to(x.dtype)
"""


def test_a_wrong_answer_or_the_wrong_guard_earns_nothing(tmp_path):
    """Zeros are no cheat (never right); a cheat caught by another guard names that guard."""
    checks = grade(tmp_path, MIXED)
    wrong_guard, zeros, fallback = (checks[c.function] for c in harness.CHEATS)
    assert not wrong_guard.passed
    assert "caught by hidden-input replay of only your kernels" in wrong_guard.message
    assert "not by fresh outputs" in wrong_guard.message, wrong_guard.message
    assert not zeros.passed
    assert "not a cheat, just wrong" in zeros.message, zeros.message
    assert fallback.passed, fallback.message
    assert "hidden-input replay" in fallback.message
