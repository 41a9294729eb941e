"""Are scripts/specialization_sweep.py's three softmax designs correct, its compile counting
and summary right, and does it refuse a CPU or a bad argument in one line? (CPU)"""

import os
import sys
from pathlib import Path

import pytest
import torch
import warm_python

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import specialization_sweep as sweep  # noqa: E402

from learning.runtime import interpreting  # noqa: E402
from reference.kernels import softmax  # noqa: E402


@pytest.mark.skipif(not interpreting(), reason="runs the kernels on the interpreter")
@pytest.mark.parametrize("design", list(sweep.DESIGNS))
@pytest.mark.parametrize("shape", [(9, 100), (37, 781), (4, 1024)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_each_design_computes_the_softmax(design, shape, dtype):
    """Does each of the three kernels match torch.softmax (masked columns, partial last
    program, rows stacked per program)?"""
    x = (3 * torch.randn(shape, generator=torch.Generator().manual_seed(1))).to(dtype)
    y = sweep.DESIGNS[design][1](x)
    assert y.shape == x.shape and y.dtype == dtype
    expected = torch.softmax(x.double(), dim=-1)
    tolerance = dict(atol=1e-6, rtol=1e-5) if dtype == torch.float32 else dict(atol=1e-3, rtol=4e-3)
    torch.testing.assert_close(y.double(), expected, **tolerance)


def test_design_c_is_the_reference_kernel():
    label, launch, kernels = sweep.DESIGNS["c"]
    assert launch is softmax.softmax_fwd and softmax._softmax_fwd_kernel in kernels


class _FakeKernel:
    """What Triton 3.6 keeps per device: (binaries by key, key cache, target, backend, binder)."""

    def __init__(self, per_device):
        self.device_caches = {d: (dict.fromkeys(range(n)), {}, None, None, None)
                              for d, n in per_device.items()}  # fmt: skip


def test_compiled_variants_counts_binaries_on_every_device():
    assert sweep.compiled_variants(_FakeKernel({0: 3, 1: 2})) == 5
    assert sweep.compiled_variants(_FakeKernel({})) == 0
    assert sweep.compiled_variants(object()) == 0  # the interpreter keeps no binaries


def test_summarize_counts_compiles_and_their_seconds():
    entries = [
        {"design": "a", "compiled": 1, "first_call_ms": 900.0, "ms": 0.02},
        {"design": "a", "compiled": 1, "first_call_ms": 300.0, "ms": 0.04},
        {"design": "a", "compiled": 1, "first_call_ms": 500.0, "ms": 0.03},
        {"design": "b", "compiled": 1, "first_call_ms": 800.0, "ms": 0.05},
        {"design": "b", "compiled": 0, "first_call_ms": 0.1, "ms": 0.07},
        {"design": "b", "compiled": 0, "first_call_ms": 0.3, "error": "oracle: wrong"},
        {"design": "c", "error": "RuntimeError()"},
    ]
    summary = sweep.summarize(entries)
    a, b, c = summary["a"], summary["b"], summary["c"]
    assert (a["compiles"], a["compile_s"], a["first_compile_s"]) == (3, pytest.approx(1.7), 0.9)
    assert a["median_compile_s"] == pytest.approx(0.5) and a["median_device_ms"] == 0.03
    assert a["median_cached_first_call_ms"] is None and a["failed"] == 0
    assert (b["compiles"], b["median_cached_first_call_ms"], b["failed"]) == (1, 0.2, 1)
    assert b["median_device_ms"] == pytest.approx(0.06)
    assert (c["compiles"], c["compile_s"], c["failed"], c["median_device_ms"]) == (0, 0, 1, None)


def test_sizes_and_shapes_are_checked():
    assert sweep.parse_sizes("1000, 1024,1000", "--rows") == [1000, 1024]
    for bad in ("", "0", "-3", "1e3", "a,1"):
        with pytest.raises(ValueError, match="--rows"):
            sweep.parse_sizes(bad, "--rows")
    sweep.check_shapes(sweep.ROW_COUNTS, sweep.WIDTHS, 2)  # the defaults are accepted
    sweep.check_shapes(sweep.ROW_COUNTS, sweep.WIDTHS, 4)
    with pytest.raises(ValueError, match="chunks"):
        sweep.check_shapes([8], [65536], 2)
    with pytest.raises(ValueError, match="MiB"):
        sweep.check_shapes([16384], [32768], 2)


@pytest.mark.parametrize(
    "argv",
    [["--rows", "abc"], ["--widths", "0"], ["--widths", "65536"], ["--dtype", "int8"],
     ["--rows", "16384", "--widths", "32768"], ["--rep-ms", "0"]],
)  # fmt: skip
def test_bad_arguments_are_one_line_and_exit_2(argv, tmp_path, capsys):
    output = tmp_path / "out.json"
    with pytest.raises(SystemExit) as exited:
        sweep.main([*argv, "--output", str(output)])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("specialization_sweep.py: error: ")
    assert not output.exists()


@pytest.mark.skipif(not interpreting(), reason="checks the CPU refusal")
def test_refuses_a_cpu_in_one_line_and_writes_nothing(tmp_path):
    """One line, exit 2, no output and no Triton cache directory made."""
    output = tmp_path / "out.json"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = warm_python.run(
        [sys.executable, str(ROOT / "scripts" / "specialization_sweep.py"),
         "--output", str(output)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
        env={**os.environ, "TMPDIR": str(scratch)},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(done.stdout.strip().splitlines()) == 1 and "GPU" in done.stdout
    assert "Traceback" not in done.stderr and not output.exists()
    assert list(scratch.iterdir()) == []


@pytest.mark.skipif(not interpreting(), reason="runs the whole flow on the interpreter")
def test_the_whole_flow_writes_a_record_that_validates(tmp_path, monkeypatch, capsys):
    """main() with the GPU parts faked: every shape x design checked and "timed", a fresh
    TRITON_CACHE_DIR set and removed, the tables printed last, a record that validates."""
    from learning.report import load_data, validate_file

    seen_cache = []

    def fake_graph_ms(call, rep_ms):
        seen_cache.append(os.environ["TRITON_CACHE_DIR"])
        call()
        return 0.5

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "old-cache"))
    monkeypatch.setattr(sweep.timing, "require_gpu", lambda script: None)
    monkeypatch.setattr(sweep.timing, "warm_gpu", lambda: 0.0)
    monkeypatch.setattr(sweep.timing, "environment", lambda: {"device": "interpreter"})
    monkeypatch.setattr(sweep.timing, "graph_ms", fake_graph_ms)
    output = tmp_path / "spec.json"
    argv = ["--rows", "5,8", "--widths", "100,128", "--output", str(output)]
    assert sweep.main(argv) == 0
    out = capsys.readouterr().out
    assert "fresh empty directory" in out and out.strip().splitlines()[-1] == f"wrote {output}"
    assert "(b)/(c)" in out and "5x100" in out.split("device ms per shape")[1]
    cache = seen_cache[0]
    assert set(seen_cache) == {cache} and "triton-cache-specialization-" in cache
    assert not Path(cache).exists()  # removed at the end
    assert validate_file(output) == []
    data = load_data(output)
    assert len(data["measurements"]) == 4 * 3
    assert all(m["ms"] == 0.5 and "error" not in m for m in data["measurements"])
    assert set(data["designs"]) == {"a", "b", "c"}
    assert all(d["compiles"] == 0 for d in data["designs"].values())  # interpreted: no binaries
