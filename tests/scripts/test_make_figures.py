"""Does scripts/make_figures.py draw every figure its recorded runs allow, and notice stale ones?

The reports here are FIXTURES: small synthetic files in the formats the scripts write, with
made-up timings. They test the drawing code and are not evidence about any GPU.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import io
import json
import shutil
import statistics
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "learning" / "schemas" / "report-v2.json"
_spec = importlib.util.spec_from_file_location("make_figures", ROOT / "scripts" / "make_figures.py")
make_figures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_figures)

FIXTURE_NOTE = (
    "FIXTURE: synthetic timings for tests/scripts/test_make_figures.py, not a measurement"
)


def _variant(name: str, kind: str, samples: list[float], case: dict, eager_median) -> dict:
    median = statistics.median(samples)
    return {
        "name": name,
        "kind": kind,
        "status": "timed",
        "reason": None,
        "correctness": {
            "passed": True,
            "max_abs_error": 1e-3,
            "tolerance_used": 1e-2,
            "reason": None,
        },
        "samples_ms": samples,
        "median_ms": median,
        "min_ms": min(samples),
        "max_ms": max(samples),
        "logical_gbps": case["logical_bytes"] / (median * 1e6),
        "tflops": case["flops"] / (median * 1e9) if case["flops"] else None,
        "ratio_vs_eager": (eager_median or median) / median,
    }


def _case(op: str, shape: list[int], logical_bytes: int, flops: int, medians: dict) -> dict:
    """A case with eager, compile and triton variants whose medians are ``medians``."""
    case = {
        "op": op,
        "shape": shape,
        "dtype": "float16",
        "logical_bytes": logical_bytes,
        "flops": flops,
        "eager_variant": "torch",
        "variants": [],
    }
    kinds = {"torch": "eager", "compile": "compile", "triton": "triton"}
    eager_median = medians["torch"]
    for name, median in medians.items():
        samples = [median * 0.98, median, median * 1.03]
        variant = _variant(name, kinds[name], samples, case, eager_median)
        case["variants"].append(variant)
    return case


def fixture_report() -> dict:
    """A FIXTURE kernel-bench report (schema v2): two memory-bound cases and one GEMM."""
    return {
        "schema_version": 2,
        "complete": True,
        "timing_note": FIXTURE_NOTE,
        "warnings": [FIXTURE_NOTE],
        "settings": {
            "op": "all",
            "ops": ["softmax", "add", "matmul"],
            "dtypes": ["float16"],
            "shapes": None,
            "seed": 0,
            "samples": 3,
            "visits": 1,
            "rounds_per_visit": 3,
            "iterations": 1,
            "timing": "graph",
            "cache": "warm",
            "compile": True,
            "impl": "reference",
            "device": "cuda",
        },
        "environment": {
            "gpu_name": "FIXTURE GPU",
            "sm_count": 132,
            "l2_bytes": 50 * 2**20,
            "driver": "fixture",
            "cuda": "fixture",
            "torch": "fixture",
            "triton": "fixture",
            "python": "3.11",
            "platform": "fixture",
            "git_commit": "0" * 40,
            "git_dirty": False,
        },
        "gpu_utilization_percent": {"before": 0, "after": 0},
        "warmup": {"burst_ms": 200.0, "rewarm_gap_ms": 500.0, "bursts_run": 1},
        "numerics_policy": {},
        "cases": [
            _case(
                "softmax",
                [4096, 4096],
                2 * 2 * 4096 * 4096,
                0,
                {"torch": 0.020, "compile": 0.018, "triton": 0.016},
            ),
            _case(
                "add",
                [1823, 781],
                3 * 2 * 1823 * 781,
                0,
                {"torch": 0.006, "compile": 0.006, "triton": 0.005},
            ),
            _case(
                "matmul",
                [4096, 4096, 4096],
                3 * 2 * 4096 * 4096,
                2 * 4096**3,
                {"torch": 0.25, "compile": 0.25, "triton": 0.30},
            ),
        ],  # fmt: skip
        "fingerprint": {"algorithm": "sha256", "files": {"learning/ops/spec.py": "a" * 64}},
        "source_snapshots": {},
    }


def fixture_clock_probe() -> dict:
    """A FIXTURE in scripts/gpu_clock_probe.py's format: slow first calls, then steady."""
    curve = [{"t_ms": 0.1 * i, "us_per_call": 2.5 * (1 + 2.0 / (1 + i))} for i in range(200)]
    return {
        "kernel": FIXTURE_NOTE,
        "environment": {"gpu_name": "FIXTURE GPU"},
        "steady_us": 2.5,
        "steady_sm_clock_mhz": 1980,
        "pause_s": 20.0,
        "idle_sm_clock_mhz": 345,
        "curve": curve,
        "curve_sm_clock_mhz": [None],
        "curve_buckets": [
            {"from_ms": 0.0, "to_ms": 1, "replays": 10, "median_us": 4.0, "vs_steady": 1.6},
            {"from_ms": 1, "to_ms": None, "replays": 190, "median_us": 2.6, "vs_steady": 1.04},
        ],
        "after_burst": [
            {"gap_ms": gap, "first_replay_us": 2.5 * f, "vs_steady": f, "sm_clock_mhz": None}
            for gap, f in ((0, 1.0), (100, 1.01), (1000, 1.2), (5000, 1.7))
        ],
    }


def fixture_stability() -> dict:
    """A FIXTURE in scripts/benchmark_stability.py's format: three sweeps, two caches."""
    sweeps = [
        {"softmax 4096x4096 float16 triton": r, "add 1823x781 float16 triton": 1.2 * r}
        for r in (1.25, 1.27, 1.24)
    ]
    result = {
        "cases": 2,
        "median_deviation": 0.008,
        "worst_deviation": 0.016,
        "most_moved": [],
        "per_sweep_ratios": sweeps,
    }
    return {
        "settings": {"op": "all", "dtype": "float16", "samples": 9, "visits": 3, "sweeps": 3,
                     "target_median": 0.02, "target_worst": 0.05},
        "results": {"warm": result, "cold": result},
    }  # fmt: skip


def fixture_gemm_regimes() -> dict:
    """A FIXTURE in scripts/gemm_regimes.py's format: two variants, two windows, two rounds."""
    rows = [
        {"shape": "64x64x64", "dtype": "float16", "variant": variant, "round": round_,
         "window_ms": window, "replays": 10, "tflops": tflops, "sm_mhz": mhz, "watts": 700.0,
         "power_capped": capped, "tflops_per_ghz": tflops / (mhz / 1e3)}
        for round_ in (0, 1)
        for variant, scale in (("fixture kernel", 1.0), ("fixture baseline", 1.05))
        for window, tflops, mhz, capped in (([0, 20], 600 * scale, 1980, 0.0),
                                            ([20, 500.0], 500 * scale, 1500 / scale, 1.0))
    ]  # fmt: skip
    return {"environment": {"device": FIXTURE_NOTE}, "rows": rows,
            "args": {"rounds": 2, "seconds": 0.5, "rest_s": 3.0, "seed": 0}}  # fmt: skip


def _write_recorded(results: Path) -> Path:
    results.mkdir()
    (results / "all.json").write_text(json.dumps(fixture_report(), indent=1))
    (results / "clock-probe.json").write_text(json.dumps(fixture_clock_probe()))
    (results / "stability.json").write_text(json.dumps(fixture_stability()))
    (results / "gemm-regimes.json").write_text(json.dumps(fixture_gemm_regimes()))
    return results


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """A results folder holding all.json, clock-probe.json, stability.json and
    gemm-regimes.json FIXTURES only."""
    return _write_recorded(tmp_path / "results")


@dataclasses.dataclass(frozen=True)
class Drawn:
    results: Path  # the FIXTURES of ``recorded``
    figures: Path  # what make_figures drew from them
    status: int
    printed: str


@pytest.fixture(scope="module")
def drawn(tmp_path_factory) -> Drawn:
    """The figures of ``recorded``'s FIXTURES, drawn once for the tests that only read them
    (drawing is most of each test's time); a test that changes them works on a copy."""
    root = tmp_path_factory.mktemp("drawn")
    results, figures = _write_recorded(root / "results"), root / "figures"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = make_figures.main(["--results", str(results), "--figures", str(figures)])
    return Drawn(results, figures, status, printed.getvalue())


EXPECTED = {
    "h200-all-ratios.png",
    "h200-all-bandwidth.png",
    "h200-all-tflops.png",
    "h200-clock-probe.png",
    "h200-stability.png",
    "h200-gemm-regimes.png",
}


@pytest.mark.skipif(not SCHEMA.is_file(), reason="no report schema in learning/schemas yet")
def test_the_fixture_report_is_a_valid_schema_v2_report():
    """Does the fixture follow the schema, its figures following from its samples?"""
    from learning.report import consistency_problems, schema_problems

    report = fixture_report()
    assert schema_problems(report) == []
    assert consistency_problems(report) == []


def test_every_recorded_run_gets_its_figures(drawn: Drawn):
    """Are the figures written under fixed names, and each missing report named once?"""
    assert drawn.status == 0
    assert {path.name for path in drawn.figures.iterdir()} == EXPECTED
    for path in drawn.figures.iterdir():
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert path.stat().st_size > 5_000, f"{path.name} looks empty"
    printed = drawn.printed
    for missing in ("all-cold.json", "training.json", "gemm-bf16.json"):
        lines = [line for line in printed.splitlines() if missing in line]
        assert len(lines) == 1 and "skipped" in lines[0], printed


def test_script_records_are_drawn_from_their_data(recorded: Path, tmp_path: Path):
    """Are clock-probe.json and stability.json drawn when they are script records, and is the
    figure's hash that of the record file as it is?"""
    from learning.report import write_record

    for name, script, data in (
        ("clock-probe", "gpu_clock_probe.py", fixture_clock_probe()),
        ("stability", "benchmark_stability.py", fixture_stability()),
        ("gemm-regimes", "gemm_regimes.py", fixture_gemm_regimes()),
    ):
        write_record(recorded / f"{name}.json", script=ROOT / "scripts" / script, data=data)
    figures = tmp_path / "figures"
    arguments = ["--results", str(recorded), "--figures", str(figures)]
    assert make_figures.main(arguments) == 0
    assert {path.name for path in figures.iterdir()} == EXPECTED
    assert make_figures.recorded_source_hash(figures / "h200-stability.png") == (
        make_figures.sha256(recorded / "stability.json")
    )
    assert make_figures.recorded_source_hash(figures / "h200-gemm-regimes.png") == (
        make_figures.sha256(recorded / "gemm-regimes.json")
    )
    assert make_figures.main([*arguments, "--check"]) == 0


def test_the_same_data_draws_the_same_bytes(drawn: Drawn, tmp_path: Path):
    """Does redrawing unchanged data leave the PNG files byte for byte the same?"""
    again = tmp_path / "again"
    make_figures.main(["--results", str(drawn.results), "--figures", str(again)])
    assert {path.name for path in again.iterdir()} == EXPECTED
    for path in drawn.figures.iterdir():
        assert path.read_bytes() == (again / path.name).read_bytes(), path.name


def test_check_passes_on_fresh_figures_and_fails_on_stale_or_missing(
    drawn: Drawn, tmp_path: Path, capsys
):
    """Does --check exit 1 when a report changed after its figure was drawn, or one is gone?"""
    recorded = shutil.copytree(drawn.results, tmp_path / "results")
    figures = tmp_path / "figures"
    arguments = ["--results", str(recorded), "--figures", str(figures)]
    assert make_figures.main([*arguments, "--check"]) == 1  # nothing drawn yet
    shutil.copytree(drawn.figures, figures)  # drawn from the same files
    assert make_figures.main([*arguments, "--check"]) == 0

    drawn_from = (recorded / "all.json").read_bytes()
    report = fixture_report()
    report["warnings"].append("FIXTURE: a second run")
    (recorded / "all.json").write_text(json.dumps(report))
    capsys.readouterr()
    assert make_figures.main([*arguments, "--check"]) == 1
    assert "h200-all-ratios.png was not drawn from" in capsys.readouterr().out

    (recorded / "all.json").write_bytes(drawn_from)  # the figures are fresh again
    assert make_figures.main([*arguments, "--check"]) == 0
    (figures / "h200-stability.png").unlink()
    capsys.readouterr()
    assert make_figures.main([*arguments, "--check"]) == 1
    assert "h200-stability.png is missing" in capsys.readouterr().out


def test_no_recorded_runs_is_not_an_error(tmp_path: Path, capsys):
    """With an empty results folder, is every source skipped with a note and nothing drawn?"""
    empty, figures = tmp_path / "results", tmp_path / "figures"
    empty.mkdir()
    assert make_figures.main(["--results", str(empty), "--figures", str(figures)]) == 0
    assert make_figures.main(["--results", str(empty), "--figures", str(figures), "--check"]) == 0
    assert not figures.exists()
    assert capsys.readouterr().out.count("not recorded yet") == 2 * len(
        make_figures.sources(empty))  # fmt: skip


def test_a_report_that_breaks_the_schema_is_not_drawn(recorded: Path, tmp_path: Path, capsys):
    """Is a malformed report refused with its first problem, exit 1, the others still drawn?"""
    report = fixture_report()
    del report["cases"][0]["variants"][0]["median_ms"]
    (recorded / "all.json").write_text(json.dumps(report))
    figures = tmp_path / "figures"
    assert make_figures.main(["--results", str(recorded), "--figures", str(figures)]) == 1
    assert "not a valid report" in capsys.readouterr().err
    assert {path.name for path in figures.iterdir()} == {
        "h200-clock-probe.png",
        "h200-stability.png",
        "h200-gemm-regimes.png",
    }


def test_the_lesson_figures_match_the_recorded_runs():
    """Is every figure in lessons/figures drawn from results/h200 as it is now?"""
    assert make_figures.main(["--check"]) == 0, "run `python scripts/make_figures.py`"


def test_a_report_of_several_dtypes_gets_one_panel_per_dtype(monkeypatch):
    """Does every dtype get its own row of bars (in the report's order), and does a
    max-autotune compile baseline say so in the legend?"""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = [{"op": "sum", "shape": [4, 8], "dtype": dtype, "eager_variant": "torch",
              "variants": [{"name": name, "kind": kind, "status": "timed", "ratio_vs_eager": 1.5}
                           for name, kind in (("torch", "eager"), ("compile", "compile"))]}
             for dtype in ("float16", "bfloat16", "float16", "float32")]  # fmt: skip
    figure, axes, dtypes = make_figures._panels(
        plt, cases, lambda v: v["ratio_vs_eager"], True, {"compile": "compile (max-autotune)"}
    )
    assert dtypes == ["float16", "bfloat16", "float32"] and len(axes) == 3
    assert len(axes[0].get_xticks()) == 2 and len(axes[2].get_xticks()) == 1
    assert [t.get_label() for t in axes[0].containers] == ["compile (max-autotune)"]
    plt.close(figure)
