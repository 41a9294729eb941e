"""Throwaway implementation packages, so the benchmark's tests never depend on ``reference/``.

``make_impl(mode)`` writes a package ``<prefix>_<mode>_<n>`` with one module per forward op
(``kernels.softmax``, ``kernels.add`` ...) into a temporary folder on ``sys.path``. The kernels
are plain PyTorch, except ``add``, a tiny Triton kernel that runs through the interpreter.
``mode`` changes the softmax only: ``ok``, ``wrong`` (fails the oracle), ``stub`` (raises
NotImplementedError), ``todo`` (a Triton kernel whose body is still ``pass``), ``interrupt``
(raises KeyboardInterrupt once, at call ``interrupt_after + 1``), ``oom`` (raises
torch.OutOfMemoryError), ``broken`` (does not import), and cheats the gate must catch:
``unwritten`` (returns ``torch.empty_like``), ``thread`` (a thread writes the answer after the
call returned), ``cache_ptr`` / ``cache_version`` (the answer cached by the input's address, or
address and version), ``after_two`` (honest for two calls, then the second answer again),
``version_log`` (honest, and notes the input's version at each call), ``gc_oracle`` (copies
the float64 oracle if it can find it), ``tamper`` (replaces ``learning.ops.softmax.torch`` and
a timer method when imported).
"""

from __future__ import annotations

import importlib
import itertools
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from own_work import PLAIN_ADD_MODULE  # a learner's add, in the loads' dtype

import learning  # noqa: F401  (chooses Triton's interpreter before anything imports triton)
from learning.bench import BenchConfig

ROWS = '''"""Helpers shared by the fake kernels (fingerprinted through the softmax module)."""
import torch


def softmax_rows(x):
    return torch.softmax(x.float(), dim=-1).to(x.dtype)
'''

SOFTMAX = '''"""A fake softmax whose behaviour the test chooses."""
import gc
import threading
import time
import types

import torch

import learning.bench.timers
import learning.ops.softmax
from {package}.kernels import _rows

CALLS = [0]
MODE = {mode!r}
INTERRUPT_AFTER = {interrupt_after!r}
CACHE = {{}}

if MODE == "tamper":  # replaced while the run runs: the report must say so
    learning.ops.softmax.torch = types.SimpleNamespace(**vars(torch))
    _prepare = learning.bench.timers.CpuTimer.prepare
    learning.bench.timers.CpuTimer.prepare = lambda self, *a, **k: _prepare(self, *a, **k)


def softmax(x):
    CALLS[0] += 1
    if MODE == "stub":
        raise NotImplementedError("write the softmax kernel")
    if MODE == "interrupt" and CALLS[0] == INTERRUPT_AFTER + 1:
        raise KeyboardInterrupt  # once, as a Ctrl-C would
    if MODE == "oom":
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    if MODE == "unwritten":  # whatever the allocator hands back
        return torch.empty_like(x)
    if MODE == "thread":  # returns at once; the answer is written a little later
        y = torch.empty_like(x)

        def finish():
            time.sleep(0.002)
            y.copy_(_rows.softmax_rows(x))

        threading.Thread(target=finish).start()
        return y
    if MODE in ("cache_ptr", "cache_version"):  # the work once, then the answer from memory
        key = x.data_ptr() if MODE == "cache_ptr" else (x.data_ptr(), x._version)
        if key not in CACHE:
            CACHE[key] = _rows.softmax_rows(x)
        return CACHE[key]
    if MODE == "after_two":  # honest for two calls, then the second answer again
        if CALLS[0] <= 2:
            CACHE["last"] = _rows.softmax_rows(x)
        return CACHE["last"]
    if MODE == "version_log":  # honest; notes the version of the input each call saw
        CACHE[(x.data_ptr(), x._version)] = CALLS[0]
    if MODE == "gc_oracle":  # the float64 oracle, if it is anywhere in memory
        for value in gc.get_objects():
            if (
                type(value) is torch.Tensor
                and value.dtype == torch.float64
                and value.shape == x.shape
            ):
                return value.to(x.dtype)
        return torch.zeros_like(x)
    y = _rows.softmax_rows(x)
    return y * 1.5 if MODE == "wrong" else y
'''

ADD = PLAIN_ADD_MODULE  # the learner package's kernels/add.py

TODO_SOFTMAX = '''"""An exercise as make_exercises.py leaves it: the kernel body is a TODO."""
import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, n):
    # TODO: subtract the row max, exponentiate, divide by the row sum
    pass


def softmax(x):
    y = torch.empty_like(x)
    _softmax_kernel[(1,)](x, y, x.numel())
    return y
'''

OTHERS = {
    "reductions": """import torch


def row_sum(x):
    return x.float().sum(dim=-1).to(x.dtype)


def row_max(x):
    return x.amax(dim=-1)
""",
    "rmsnorm": '''from learning.ops import rmsnorm_composition as rmsnorm


def benchmark_variants(shape, dtype):
    """Extra named variants: the benchmark's hook, e.g. other row plans."""
    return {"again": rmsnorm}
''',
    "matmul": """import torch


def matmul(a, b):
    return (a.float() @ b.float()).to(a.dtype)
""",
}

_numbers = itertools.count()


@pytest.fixture
def make_impl(tmp_path: Path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    created: list[str] = []

    def make(mode: str = "ok", interrupt_after: int | None = None, prefix: str = "impl") -> str:
        package = f"{prefix}_{mode}_{next(_numbers)}"
        kernels = tmp_path / package / "kernels"
        kernels.mkdir(parents=True)
        (tmp_path / package / "__init__.py").write_text('"""A throwaway implementation."""\n')
        (kernels / "__init__.py").write_text("")
        (kernels / "_rows.py").write_text(ROWS)
        softmax = SOFTMAX.format(package=package, mode=mode, interrupt_after=interrupt_after)
        if mode == "broken":
            softmax = "import a_module_that_does_not_exist\n"
        if mode == "todo":
            softmax = TODO_SOFTMAX
        (kernels / "softmax.py").write_text(softmax)
        (kernels / "add.py").write_text(ADD)
        for name, text in OTHERS.items():
            (kernels / f"{name}.py").write_text(text)
        importlib.invalidate_caches()
        created.append(package)
        return package

    yield make
    for name in list(sys.modules):
        if name.split(".")[0] in created:
            del sys.modules[name]


@pytest.fixture
def small_config(tmp_path: Path):
    """A CPU config on one tiny case; override any field with keyword arguments."""

    def make(**changes) -> BenchConfig:
        config = BenchConfig(
            op="softmax",
            output=tmp_path / "report.json",
            shapes=((4, 8),),
            dtype="float32",
            samples=4,
            visits=2,
            device="cpu",
            quiet=True,
        )
        return replace(config, **changes)

    return make
