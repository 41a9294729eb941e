"""GPU only: a kernel that keeps its data resident in L2 across the cold flush is rejected.

The cheat: on its first call, the learner's softmax asks the CUDA driver to set part of the L2
aside for "persisting" accesses (``cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE)``) and
marks its input's memory persisting on the stream (an access-policy window). Lines held that
way survive the flush that ``--cache cold`` streams through the L2, so its cold figure would
be a warm one. kernel-bench empties the set-aside for the run (the driver may start with
one), reads the limit around every variant's checked and warm-up calls, and rejects a variant
that raised it, naming the fault; the limit is put back, so the other variants are timed as
usual, and the context's own set-aside is restored when the run ends. The recorded run:
``results/h200/l2-residency-cheat.log``.
"""

from __future__ import annotations

import ctypes
import importlib
import json

import pytest
import torch

import learning  # noqa: F401  (chooses the Triton backend before triton is imported)
from learning.bench import BenchConfig, run
from learning.bench.machine import PersistingL2
from learning.runtime import interpreting

pytestmark = pytest.mark.skipif(
    interpreting() or not torch.cuda.is_available(), reason="needs a CUDA GPU"
)

CHEAT = '''"""A softmax that pins its input in L2 (the cheat under test)."""
import ctypes

import torch

_cuda = ctypes.CDLL("libcuda.so.1")
PINNED = [0]


class _Window(ctypes.Structure):  # CUaccessPolicyWindow inside the 64-byte attribute union
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t),
                ("hit_ratio", ctypes.c_float), ("hit_prop", ctypes.c_int),
                ("miss_prop", ctypes.c_int), ("_pad", ctypes.c_char * 36)]


def _pin(x):
    _cuda.cuCtxSetLimit(0x06, ctypes.c_size_t(32 << 20))  # CU_LIMIT_PERSISTING_L2_CACHE_SIZE
    window = _Window(x.data_ptr(), min(x.numel() * x.element_size(), 32 << 20), 1.0, 2, 1)
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    _cuda.cuStreamSetAttribute(stream, 1, ctypes.byref(window))  # ACCESS_POLICY_WINDOW
    PINNED[0] += 1


def softmax(x):
    _pin(x)
    return torch.softmax(x.float(), dim=-1).to(x.dtype)
'''

HONEST = '''"""The same softmax without the cheat (the control)."""
import torch


def softmax(x):
    return torch.softmax(x.float(), dim=-1).to(x.dtype)
'''


def _package(tmp_path, monkeypatch, name: str, softmax: str) -> str:
    kernels = tmp_path / name / "kernels"
    kernels.mkdir(parents=True)
    (tmp_path / name / "__init__.py").write_text("")
    (kernels / "__init__.py").write_text("")
    (kernels / "softmax.py").write_text(softmax)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    return name


def _bench(tmp_path, package: str, cache: str) -> dict:
    config = BenchConfig(
        op="softmax", output=tmp_path / f"{package}-{cache}.json", shapes=((2048, 4096),),
        dtype="float16", cache=cache, samples=3, visits=1, impl="learner",
        learner_package=package, quiet=True,
    )  # fmt: skip
    run(config)
    return json.loads(config.output.read_text())


def _variants(report: dict) -> dict:
    (case,) = report["cases"]
    return {v["name"]: v for v in case["variants"]}


@pytest.mark.parametrize("cache", ["cold", "warm"])
def test_a_kernel_that_pins_l2_is_rejected_and_the_rest_are_timed(tmp_path, monkeypatch, cache):
    torch.cuda.synchronize()  # the CUDA context exists from here on: the driver can answer
    guard = PersistingL2()
    found = guard.bytes()  # the driver may start with a set-aside (11.25 MiB on our H200)
    package = _package(tmp_path, monkeypatch, f"l2_cheat_{cache}", CHEAT)
    report = _bench(tmp_path, package, cache)
    assert report["environment"]["persisting_l2_bytes"] == {"found": found, "during_run": 0}
    variants = _variants(report)
    learner = variants["learner"]
    print(f"{cache}: learner -> {learner['status']}: {learner['reason']}")
    assert learner["status"] == "failed"
    reason = learner["reason"]
    assert "persisting" in reason and "survives the cold-cache flush" in reason
    assert learner["correctness"]["passed"] is False
    for name in ("torch", "triton"):
        assert variants[name]["status"] == "timed", variants[name]
    assert guard.bytes() == found, "the context's set-aside was not put back"


def test_the_honest_control_is_timed(tmp_path, monkeypatch):
    package = _package(tmp_path, monkeypatch, "l2_honest", HONEST)
    variants = _variants(_bench(tmp_path, package, "cold"))
    assert variants["learner"]["status"] == "timed", variants["learner"]


def test_the_pin_works_when_nothing_guards(tmp_path):
    """What the guard prevents, measured: the cheat's set-aside as the driver reports it."""
    torch.cuda.synchronize()
    guard = PersistingL2()
    found = guard.bytes()
    cuda = ctypes.CDLL("libcuda.so.1")
    assert cuda.cuCtxSetLimit(0x06, ctypes.c_size_t(found + (16 << 20))) == 0
    try:
        granted = guard.bytes()
        print(f"persisting L2: found {found / 2**20:.2f} MiB, granted {granted / 2**20:.2f} MiB")
        assert granted > found
    finally:
        guard.restore(found)
    assert guard.bytes() == found
