"""Shared by every test folder: pytest puts this folder (``tests/``) on ``sys.path`` when it
loads this file, so a test module can import the helpers here (``warm_python``).

Markers (``pyproject.toml``), applied here when the tests are collected:

* ``gpu``: the test needs a CUDA device, compiled (not the interpreter); without one it is
  skipped, saying so. ``gpu(capability=(9, 0))`` asks for that compute capability as well (the
  Hopper kernels). ``pytest -m gpu`` selects every GPU test, ``-m "not gpu"`` the others.
* ``slow``: the test takes more than about 10 s on a 2-core CPU. ``make test`` runs them,
  ``make test-fast`` (``pytest -m "not slow"``) leaves them out.
"""

from __future__ import annotations

import sys

import pytest

import interpreter_scope  # isort: skip  (imports `learning` first: the backend is chosen)

# Triton's interpreter leaves triton.language.core patched after a device-function call, and
# the next kernel compiled in this process fails (tests/interpreter_scope.py says how).
interpreter_scope.install()


def _gpu_skip_reason(capability: tuple[int, int] | None) -> str | None:
    """Why a ``gpu`` test cannot run here, or None when it can."""
    import torch

    from learning.runtime import interpreting

    if interpreting() or not torch.cuda.is_available():
        return "needs a CUDA device (this machine runs Triton's interpreter)"
    if capability is not None and torch.cuda.get_device_capability() != tuple(capability):
        have = "sm_{}{}".format(*torch.cuda.get_device_capability())
        return f"needs a GPU of compute capability sm_{capability[0]}{capability[1]}, not {have}"
    return None


def pytest_collection_modifyitems(config, items):
    """Skip each ``gpu`` test this machine cannot run, with the reason; name the groups of
    ``xdist_group`` tests in their node ids under ``--dist loadgroup``."""
    if getattr(config.option, "loadgroup", False):
        _name_groups(items)
    reasons: dict = {}
    for item in items:
        marker = item.get_closest_marker("gpu")
        if marker is None:
            continue
        capability = marker.kwargs.get("capability")
        key = None if capability is None else tuple(capability)
        if key not in reasons:
            reasons[key] = _gpu_skip_reason(key)
        if reasons[key] is not None:
            item.add_marker(pytest.mark.skip(reason=reasons[key]))


def _name_groups(items) -> None:
    """Under ``--dist loadgroup``, name each ``xdist_group`` test's group in its node id.

    pytest-xdist sends the tests whose node id ends in ``@<group>`` to one worker, and puts the
    suffix there itself by setting ``item._nodeid``; since pytest 9 a node id is read from
    ``item._id``, so that assignment is lost and a group's tests are spread over the workers,
    each building the group's shared fixture again (the reference's graded runs twice)."""
    if not items or not hasattr(items[0], "_id"):
        return  # an older pytest: pytest-xdist's own suffix holds
    from _pytest.nodeid import NodeId

    for item in items:
        names = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                        for mark in item.iter_markers("xdist_group")})  # fmt: skip
        if names and not item.nodeid.endswith(f"@{'_'.join(names)}"):
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")


def pytest_collection_finish(session):
    """A collected test module runs scripts through ``warm_python``: start its server now, so
    that it imports torch while the first tests run."""
    if "warm_python" in sys.modules and session.items:
        sys.modules["warm_python"].start()


@pytest.fixture(scope="session")
def reference_report():
    """``reference_report(name)``: the checker's report on the reference for exercise ``name``
    (``check_exercise(name, "reference")``, its check process and all), made once a session;
    ``reference_report.launched[name]``: the kernels that run launched (a kernel exercise's).

    Grading the reference is the slowest part of several tests that each ask something of it
    (``tests/learning/test_check_kernels.py``: does it earn every point;
    ``test_check_kernel_paths.py``: does some check launch every kernel of its file;
    ``test_check_traffic.py``: does it move its logical bytes); the run is the same each time,
    so they share it. Under pytest-xdist they share one worker (the ``reference`` group)."""
    from learning.check import kernels
    from learning.check.runner import check_exercise  # imports `learning`: only when used

    reports, launched = {}, {}

    def report(name: str):
        if name not in reports:
            seen: set[str] = set()
            grade = kernels._Exercise.grade

            def grading(self):  # the trusted side's own record of what the traces launched
                try:
                    return grade(self)
                finally:
                    seen.update(self.launched)

            kernels._Exercise.grade = grading
            try:
                reports[name] = check_exercise(name, "reference")
            finally:
                kernels._Exercise.grade = grade
            launched[name] = frozenset(seen)
        return reports[name]

    report.launched = launched
    return report
