"""scripts/gemm_regimes.py on a CPU.

It measures on a Hopper GPU only; here: its refusal of a CPU and of bad arguments (one line,
exit 2, nothing written), and the arithmetic that turns replays and NVML samples into the
windows it prints.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import warm_python

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import gemm_regimes  # noqa: E402  (imports learning first: it selects the backend)

from learning.runtime import interpreting  # noqa: E402


def _run(script: str, *args) -> subprocess.CompletedProcess:
    return warm_python.run([sys.executable, str(ROOT / "scripts" / script), *map(str, args)],
                           capture_output=True, text=True, cwd=ROOT, timeout=120)  # fmt: skip


@pytest.mark.skipif(not interpreting(), reason="checks the CPU refusal")
@pytest.mark.parametrize("args", [[], ["--profile", "cooperative", "--shape", "8", "8", "8"]])
def test_it_refuses_a_cpu_in_one_line_and_writes_nothing(args, tmp_path):
    output = tmp_path / "out.json"
    done = _run("gemm_regimes.py", "--rounds", "1", *args, "--output", output)
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(done.stdout.strip().splitlines()) == 1 and "GPU" in done.stdout
    assert "Traceback" not in done.stderr and not output.exists()


@pytest.mark.parametrize(("args", "says"), [
    (["--rounds", "0"], "--rounds"),
    (["--seconds", "-1"], "--seconds"),
    (["--rest-s", "x"], "--rest-s"),
    (["--profile", "torch.mm"], "--profile and --shape go together"),
    (["--profile", "cublas", "--shape", "8", "8", "8"], "--profile"),
    (["--profile", "cooperative", "--shape", "8", "0", "8"], "--shape"),
    (["--group-m", "0"], "--group-m"),
    (["--group-m", "8", "--profile", "torch.mm", "--shape", "8", "8", "8"], "one or the other"),
])  # fmt: skip
def test_bad_arguments_are_one_line_and_exit_2(args, says, tmp_path):
    output = tmp_path / "out.json"
    done = _run("gemm_regimes.py", *args, "--output", output)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gemm_regimes: ") and says in lines[0]
    assert not output.exists()


def test_windows_take_the_replays_and_samples_that_started_in_them():
    """A run of 500 ms: windows 0-20, 20-100, 100-300 and 300-500; each replay's rate and each
    NVML sample counted in the window it started in; rate per GHz from the medians."""
    rates = [(t, 600.0 if t < 100 else 500.0) for t in range(0, 500, 2)]
    power_cap = gemm_regimes.POWER_CAP
    nvml = [(t + 0.5, 1980 if t < 100 else 1500, 700.0, power_cap if t >= 300 else 0)
            for t in range(0, 500)]  # fmt: skip
    rows = gemm_regimes.summarize(rates, nvml, seconds=0.5)
    assert [row["window_ms"] for row in rows] == [[0, 20], [20, 100], [100, 300], [300, 500.0]]
    first, _, third, last = rows
    assert first["replays"] == 10 and first["tflops"] == 600.0 and first["sm_mhz"] == 1980
    assert first["tflops_per_ghz"] == pytest.approx(600 / 1.98)
    assert third["tflops"] == 500.0 and third["sm_mhz"] == 1500 and third["power_capped"] == 0
    assert last["power_capped"] == 1.0 and last["tflops_per_ghz"] == pytest.approx(500 / 1.5)


def test_a_group_variant_sets_the_order_for_its_call_only(monkeypatch):
    """``--group-m``'s variants call the cooperative kernel with their GROUP_M and leave the
    kernel's own value in place, even when the call raises."""
    seen = []
    monkeypatch.setattr(gemm_regimes.cooperative, "matmul",
                        lambda a, b: seen.append(gemm_regimes.cooperative.GROUP_M) or a)
    own = gemm_regimes.cooperative.GROUP_M
    assert gemm_regimes.cooperative_with_group(3)("a", "b") == "a"
    assert seen == [3] and gemm_regimes.cooperative.GROUP_M == own

    def broken(a, b):
        raise RuntimeError("launch failed")

    monkeypatch.setattr(gemm_regimes.cooperative, "matmul", broken)
    with pytest.raises(RuntimeError):
        gemm_regimes.cooperative_with_group(5)("a", "b")
    assert gemm_regimes.cooperative.GROUP_M == own


def test_a_run_shorter_than_a_window_edge_ends_its_last_window_there():
    rows = gemm_regimes.summarize([(1.0, 100.0), (50.0, 90.0)], [(1.0, 1000, 1.0, 0),
                                                                 (50.0, 1000, 1.0, 0)], 0.06)
    assert [row["window_ms"] for row in rows] == [[0, 20], [20, 60.0]]
