"""Which pytest-xdist worker grades the reference for an exercise (``reference_report``).

Grading the reference is a test run's longest chain: ``tests/conftest.py``'s session fixture
``reference_report`` grades it once a worker, and every test that reads a run is sent to the
worker that grades it by an ``xdist_group`` mark. One group a kernel file (the exercises whose
ops live in it, forward and training, share the file's tests) lets the workers grade the files
side by side instead of one worker grading them all.
"""

from __future__ import annotations

import pytest

from learning import ops


def group_of_module(module: str) -> pytest.MarkDecorator:
    """The mark of the tests that read the reference's runs of the exercises in ``module``."""
    return pytest.mark.xdist_group(f"reference-{module}")


def group(exercise: str) -> pytest.MarkDecorator:
    """The mark of the tests that read the reference's run of ``exercise``."""
    return group_of_module(ops.exercises()[exercise][0].module)
