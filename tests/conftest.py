"""Shared by every test folder: pytest puts this folder (``tests/``) on ``sys.path`` when it
loads this file, so a test module can import the helpers here (``warm_python``)."""

from __future__ import annotations

import sys

import pytest


def pytest_collection_finish(session):
    """A collected test module runs scripts through ``warm_python``: start its server now, so
    that it imports torch while the first tests run."""
    if "warm_python" in sys.modules and session.items:
        sys.modules["warm_python"].start()


@pytest.fixture(scope="session")
def reference_report():
    """``reference_report(name)``: the checker's report on the reference for exercise ``name``
    (``check_exercise(name, "reference")``, its check process and all), made once a session.

    Grading the reference is the slowest part of several tests that each ask whether it earns
    every point (``tests/learning/test_check_kernels.py``, ``tests/scripts/test_make_exercises
    .py``); the report is the same each time, so they share it."""
    from learning.check.runner import check_exercise  # imports `learning`: only when used

    reports = {}

    def report(name: str):
        if name not in reports:
            reports[name] = check_exercise(name, "reference")
        return reports[name]

    return report
