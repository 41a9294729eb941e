"""Is a learner's kernel timed by what its kernels do, with none of its Python in the benchmark?

Each cheat below is a throwaway learner package (written into ``tmp_path``) run through
``kernel-bench --impl learner --device cpu``. Each beat the benchmark when it imported the
learner's module into its own process; now the learner's function runs once in a process of
its own, and what is checked and timed is a replay of its kernels' launches
(``learning.bench.learner``).
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

import learning.bench.timers
import learning.correctness
import learning.ops.softmax
import learning.report
from learning.bench import cli, run
from learning.report.fingerprint import REPO_ROOT

KERNEL = '''"""A learner's softmax: one program a row."""
import threading
import time

import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr, NORMALIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    if NORMALIZE:
        e = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * stride + cols, e, mask=mask)


def _launch(x, y=None, rows=None, normalize=True):
    y = torch.empty_like(x) if y is None else y
    grid = (x.shape[0] if rows is None else rows,)
    block = triton.next_power_of_2(x.shape[1])
    _softmax_kernel[grid](x, y, x.shape[1], x.stride(0), BLOCK=block, NORMALIZE=normalize)
    return y


CACHE = {}
'''

CHEATS = {
    # The answer from PyTorch, then from memory, keyed on (data_ptr, version).
    "cached": """
def softmax(x):
    key = (x.data_ptr(), x._version)
    if key not in CACHE:
        CACHE[key] = torch.softmax(x, dim=-1)
    return CACHE[key]
""",
    # Only the first row launched; the rest whatever the allocator held.
    "unwritten": """
def softmax(x):
    return _launch(x, rows=1)
""",
    # Returns at once; a thread launches the kernel into the output afterwards.
    "thread": """
def softmax(x):
    y = torch.empty_like(x)

    def finish():
        time.sleep(0.2)
        _launch(x, y)

    threading.Thread(target=finish).start()
    return y
""",
    # A decoy launch, then PyTorch's softmax as the answer.
    "decoy": """
def softmax(x):
    _launch(x[:1])
    return torch.softmax(x, dim=-1)
""",
}
REASONS = {
    "cached": "a tensor PyTorch computed",
    "unwritten": "never stored",
    "thread": "never stored",
    "decoy": "a tensor PyTorch computed",
}

# Replaces, when imported, what used to rescale timings (2.12x honest -> 0.49x), slow the eager
# baseline (3.4 -> 21.4 ms) and switch the gate off, and marks that it ran; its kernel is wrong.
TAMPER = """
import types
from pathlib import Path

import learning.bench.timers
import learning.correctness
import learning.ops.softmax


class _SlowTorch(types.ModuleType):
    def __getattr__(self, name):
        value = getattr(torch, name)
        if name != "softmax":
            return value
        return lambda *args, **kwargs: (time.sleep(0.02), value(*args, **kwargs))[1]


Path({marker!r}).write_text("imported")
learning.bench.timers.time = type("Fast", (), {{"perf_counter": staticmethod(lambda: 0.0)}})
learning.ops.softmax.torch = _SlowTorch("torch")
learning.correctness.compare_all = lambda *args, **kwargs: []


def softmax(x):
    return _launch(x, normalize=False)
"""

HONEST = """
def softmax(x):
    return _launch(x)
"""


def write_package(root: Path, name: str, softmax: str) -> str:
    kernels = root / name / "kernels"
    kernels.mkdir(parents=True)
    (root / name / "__init__.py").write_text('"""A learner\'s package."""\n')
    (kernels / "__init__.py").write_text("")
    (kernels / "softmax.py").write_text(KERNEL + softmax)
    return name


@pytest.fixture
def learner_run(tmp_path, monkeypatch, make_impl, small_config):
    """``run_learner(body)``: a CPU run of a learner package whose softmax is ``body``."""
    monkeypatch.syspath_prepend(str(tmp_path))
    created = []

    def run_learner(body: str, package: str | None = None, **changes):
        package = package or write_package(tmp_path, f"learner_{len(created)}", body)
        created.append(package)
        settings = dict(shapes=((16, 64),), samples=2, visits=1) | changes
        config = small_config(
            reference_package=make_impl(),
            impl="learner",
            learner_package=package,
            output=tmp_path / f"{package}.json",
            **settings,
        )
        report = run(config)
        assert learning.report.validate(report.data) == []
        assert package not in sys.modules, "the learner's package was imported by the benchmark"
        return report

    yield run_learner
    for name in list(sys.modules):
        if name.split(".")[0] in created:
            del sys.modules[name]


def _variants(report):
    return {v["name"]: v for v in report.data["cases"][0]["variants"]}


def test_an_honest_learner_is_timed_by_replay_and_its_files_fingerprinted(learner_run):
    report = learner_run(HONEST)
    learner = _variants(report)["learner"]
    assert learner["status"] == "timed" and learner["correctness"]["passed"] is True
    assert learner["median_ms"] > 0.5, "an interpreted kernel takes milliseconds"
    assert "replaying its kernels' launches" in learner["method"]
    files = report.data["fingerprint"]["files"]
    used = sorted(path.split("learner_0/")[1] for path in files if "/learner_0/" in path)
    assert used == ["__init__.py", "kernels/__init__.py", "kernels/softmax.py"]
    assert "learning/bench/worker.py" in files and "learning/check/replay/play.py" in files


def test_a_copy_of_the_reference_is_timed_and_valid(learner_run, tmp_path):
    shutil.copytree(REPO_ROOT / "reference", tmp_path / "learner_copy")
    report = learner_run(None, package="learner_copy")
    assert _variants(report)["learner"]["status"] == "timed"
    files = report.data["fingerprint"]["files"]
    for name in ("softmax.py", "row_plan.py", "launch.py"):
        assert any(path.endswith(f"learner_copy/kernels/{name}") for path in files), name


@pytest.mark.parametrize("cheat", CHEATS)
def test_a_cheat_is_rejected_with_its_reason(cheat, learner_run):
    learner = _variants(learner_run(CHEATS[cheat]))["learner"]
    assert learner["status"] == "failed" and learner["samples_ms"] == [], learner
    assert REASONS[cheat] in learner["reason"], learner["reason"]


def test_a_cache_behind_a_real_first_launch_is_timed_at_the_kernels_cost(learner_run):
    """The first call's launches are what is replayed: every timed call does the work."""
    cached = """
def softmax(x):
    key = (x.data_ptr(), x._version)
    if key not in CACHE:
        CACHE[key] = _launch(x)
    return CACHE[key]
"""
    learner = _variants(learner_run(cached))["learner"]
    assert learner["status"] == "timed"
    assert learner["min_ms"] > 0.5, "the dictionary lookup (microseconds) was timed"


def test_the_learners_module_cannot_touch_timers_baselines_or_the_gate(learner_run, tmp_path):
    (tmp_path / "marks").mkdir()  # not on the import path: a folder the benchmark ignores
    marker = tmp_path / "marks" / "imported.txt"
    timers_time, ops_torch, compare_all = (
        learning.bench.timers.time,
        learning.ops.softmax.torch,
        learning.correctness.compare_all,
    )
    report = learner_run(TAMPER.format(marker=str(marker)))
    assert marker.read_text() == "imported", "the cheat never ran"
    assert learning.bench.timers.time is timers_time
    assert learning.ops.softmax.torch is ops_torch is torch
    assert learning.correctness.compare_all is compare_all
    variants = _variants(report)
    assert variants["learner"]["status"] == "failed"
    assert "gave a different result" in variants["learner"]["reason"]
    assert variants["torch"]["status"] == "timed" and variants["torch"]["min_ms"] > 0
    assert not [w for w in report.data["warnings"] if "changed while it ran" in w]


def test_a_kernel_the_replay_cannot_read_is_a_one_line_error(tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(tmp_path))
    body = HONEST + '\n\n@triton.jit\ndef _sneaky(x_ptr):\n    getattr(tl, "store")(x_ptr, 1)\n'
    package = write_package(tmp_path, "learner_getattr", body)
    line = "--op softmax --shape 16 64 --dtype float32 --impl learner --device cpu --output"
    config = replace(cli.parse([*line.split(), str(tmp_path / "r.json")]), learner_package=package)
    monkeypatch.setattr(cli, "parse", lambda argv: config)
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "cannot be replayed" in err, err
    assert "getattr" in err and not (tmp_path / "r.json").exists()


def test_a_learner_that_rewrites_a_file_the_benchmark_loads_is_refused(learner_run, tmp_path):
    """The learner's process runs as the same user: it could edit a course file so that the
    benchmark's own later imports (the replay) ran its code. Every call is recorded, its
    process ended, and the loaded files checked before anything is replayed."""
    course = tmp_path / "course_part"
    course.mkdir()
    (course / "course_module.py").write_text("VALUE = 1\n")
    sys.path.insert(0, str(course))
    try:
        import course_module  # noqa: F401  (loaded by the benchmark's process: watched)

        body = HONEST + f"\nopen({str(course / 'course_module.py')!r}, 'a').write('VALUE = 2\\n')\n"
        with pytest.raises(learning.bench.BenchInputError, match="changed files the benchmark"):
            learner_run(body)
    finally:
        sys.path.remove(str(course))
        sys.modules.pop("course_module", None)


def test_a_process_the_learner_leaves_behind_is_ended_before_anything_is_timed(
    learner_run, tmp_path
):
    """A child that leaves the learner's process group (setsid) is still ended: the benchmark
    is the subreaper of its children's orphans."""
    (tmp_path / "pids").mkdir()  # not on the import path, so not a watched folder
    pid_file = tmp_path / "pids" / "escaped.pid"
    body = HONEST + f"""
import os as _os
if _os.fork() == 0:
    _os.setsid()
    if _os.fork() == 0:
        open({str(pid_file)!r}, "w").write(str(_os.getpid()))
        import time as _time
        _time.sleep(120)
    _os._exit(0)
"""
    report = learner_run(body)
    assert _variants(report)["learner"]["status"] == "timed"
    escaped = int(pid_file.read_text())
    assert not Path(f"/proc/{escaped}").exists(), "the learner's escaped process outlived it"
