"""A real (CPU) report to validate, from throwaway kernel packages outside the repository."""

from __future__ import annotations

import importlib
import itertools
import sys
from pathlib import Path

import pytest

import learning  # noqa: F401  (chooses Triton's interpreter before anything imports triton)
from learning.bench import BenchConfig, run

SOFTMAX = """import torch

from {package}.kernels import _rows


def softmax(x):
    return _rows.softmax_rows(x)
"""
ROWS = """import torch


def softmax_rows(x):
    return torch.softmax(x.float(), dim=-1).to(x.dtype)
"""
_numbers = itertools.count()


@pytest.fixture
def make_package(tmp_path: Path, monkeypatch):
    """Write a package with ``kernels.softmax`` (plus a helper it imports); return its name."""
    monkeypatch.syspath_prepend(str(tmp_path))
    created = []

    def make(prefix: str) -> str:
        package = f"{prefix}_{next(_numbers)}"
        kernels = tmp_path / package / "kernels"
        kernels.mkdir(parents=True)
        (tmp_path / package / "__init__.py").write_text("")
        (kernels / "__init__.py").write_text("")
        (kernels / "_rows.py").write_text(ROWS)
        (kernels / "softmax.py").write_text(SOFTMAX.format(package=package))
        importlib.invalidate_caches()
        created.append(package)
        return package

    yield make
    for name in list(sys.modules):
        if name.split(".")[0] in created:
            del sys.modules[name]


@pytest.fixture
def cpu_run(make_package, tmp_path):
    """``cpu_run(impl=...)`` -> the Report of a small CPU run."""

    def go(impl: str = "reference", **changes):
        config = BenchConfig(
            op="softmax",
            output=tmp_path / f"{impl}.json",
            shapes=((4, 8), (3, 5)),
            dtype="float32",
            samples=2,
            visits=1,
            device="cpu",
            quiet=True,
            impl=impl,
            reference_package=make_package("fake_reference"),
            learner_package=make_package("fake_exercises"),
            **changes,
        )
        return run(config)

    return go
