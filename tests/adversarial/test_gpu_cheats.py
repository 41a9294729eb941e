"""Cheats that only a GPU can show: work hidden on a side stream, a cache keyed on the input's
address and version, a PyTorch result behind a decoy launch. Each is graded by the checker and
timed by kernel-bench's learner path on a compiled CUDA device; on the CPU these tests skip.

What must hold: the checker gives none of them full marks, and kernel-bench either refuses
the learner variant or times the work its kernels really do, so that no cheat reads faster
than the reference by more than the noise (a hidden or skipped computation once read
0.0000 ms against the reference's 0.0666 ms).
"""

from __future__ import annotations

import json

import pytest

from learning.bench import BenchConfig, BenchInputError, run
from learning.check import kernels
from tests.adversarial.test_kernel_cheats import NOT_YOURS_CHEATS, earned, grade, make_cheat

pytestmark = pytest.mark.gpu

SIDE_STREAM = """
_side = None


def softmax(x):
    # Correct, but launched on a private stream the caller never waits for: a timer on the
    # current stream sees nothing of it.
    global _side
    if _side is None:
        _side = torch.cuda.Stream()
    y = torch.empty_like(x)
    with torch.cuda.stream(_side):
        launch(x, y)
    return y
"""

# The other two are the CPU suite's own, graded here on a compiled device.
CHEATS = {
    "side_stream": SIDE_STREAM,
    "version_cache": NOT_YOURS_CHEATS["a cache keyed on pointer, layout and version"][0],
    "decoy": NOT_YOURS_CHEATS["a no-op launch, then PyTorch's result"][0],
}


@pytest.mark.parametrize("cheat", list(CHEATS))
def test_the_checker_gives_a_gpu_cheat_less_than_full_marks(cheat, tmp_path, monkeypatch):
    results = grade(tmp_path, monkeypatch, CHEATS[cheat])
    assert earned(results) < kernels.points_for("softmax"), {
        name: r.message for name, r in results.items() if not r.passed
    }


@pytest.mark.parametrize("cheat", list(CHEATS))
def test_kernel_bench_times_no_gpu_cheat_as_faster_than_the_reference(cheat, tmp_path, monkeypatch):
    package = make_cheat(tmp_path, monkeypatch, CHEATS[cheat])
    config = BenchConfig(
        op="softmax", output=tmp_path / f"{cheat}.json", shapes=((16384, 4096),),
        dtype="float16", samples=6, visits=2, impl="learner", learner_package=package,
        quiet=True,
    )  # fmt: skip
    try:
        run(config)
    except BenchInputError as refused:  # e.g. only a do-nothing kernel: "unfinished"
        assert "unfinished" in str(refused), refused
        return
    (case,) = json.loads(config.output.read_text())["cases"]
    variants = {v["name"]: v for v in case["variants"]}
    learner = next(v for v in case["variants"] if v["kind"] == "learner")
    reference = variants["triton"]
    assert reference["status"] == "timed"
    if learner["status"] != "timed":
        return  # refused, with its reason: nothing was timed
    # timed: then what was timed is its kernels' real work, as slow as an honest softmax
    assert learner["median_ms"] > 0.5 * reference["median_ms"], (learner, reference)
