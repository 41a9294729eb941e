"""Does scripts/row_chunk_sweep.py sweep the right shapes and ops, check every plan it times,
score the runs honestly, and refuse a CPU or a bad argument in one line? (CPU)"""

import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import row_chunk_sweep as sweep  # noqa: E402

from learning import ops  # noqa: E402
from learning.runtime import interpreting  # noqa: E402
from reference.kernels.row_plan import RowPlan  # noqa: E402


def test_the_four_lesson_shapes_and_every_row_op():
    """Are the shapes the lessons discuss, and every op the row plan serves, in the sweep?"""
    assert sweep.SHAPES == ((16384, 4096), (65536, 128), (4096, 32768), (1823, 781))
    assert list(sweep.OPS) == ["sum", "max", "softmax", "softmax_bwd", "rmsnorm", "rmsnorm_bwd"]
    assert set(sweep.REGISTRY) == set(sweep.OPS)
    for name in sweep.REGISTRY.values():
        assert name in ops.OPS, name  # op facts come from the registry


def test_parse_ops_and_shapes():
    assert sweep.parse_ops("all") == list(sweep.OPS)
    assert sweep.parse_ops("max, sum,max") == ["max", "sum"]
    assert sweep.parse_shapes("16384x4096, 1823X781") == [(16384, 4096), (1823, 781)]
    for bad in ("nope", "sum,nope", ""):
        with pytest.raises(ValueError, match="choose from"):
            sweep.parse_ops(bad)
    for bad in ("12x", "0x5", "3x4x5", "axb", ""):
        with pytest.raises(ValueError):
            sweep.parse_shapes(bad)


@pytest.mark.parametrize("op", list(sweep.OPS))
@pytest.mark.parametrize("shape", sweep.SHAPES)
def test_candidates_hold_the_rule_and_only_runnable_plans(op, shape):
    chosen, plans = sweep.cell_plans(op, shape[1], 2)
    assert chosen in plans and len(plans) == len(set(plans)) > 1
    for plan in plans:
        assert isinstance(plan, RowPlan)
        if plan.chunked:  # a multi-pass op may walk a wide row as one chunk, read twice
            one_chunk = sweep.OPS[op][0] > 1 and plan.block_cols == shape[1] >= 8192
            assert (plan.block_cols < shape[1] or one_chunk) and plan.rows_per_program == 1, plan
        else:
            assert plan.block_cols >= shape[1], plan


def _row(op, shape, chosen, timings, best):
    return {"op": op, "shape": shape, "dtype": "float16", "chosen": chosen, "logical_bytes": 1e9,
            "chosen_ms": next(t["ms"] for t in timings if t["plan"] == chosen), "best": best,
            "timings": timings}  # fmt: skip


def test_combine_takes_each_plans_median_over_the_runs():
    """Is the best plan the fastest by its median over the runs, the loss the rule's median
    over that, and the noise the median run-to-run spread of the plans timed in every run?"""
    rule, other, broken = {"p": "rule"}, {"p": "other"}, {"p": "broken"}
    run1 = _row("sum", "4x8", rule, [{"plan": rule, "ms": 1.00}, {"plan": other, "ms": 0.90},
                                     {"plan": broken, "error": "oracle"}], other)  # fmt: skip
    run2 = _row("sum", "4x8", rule, [{"plan": rule, "ms": 1.10}, {"plan": other, "ms": 1.00},
                                     {"plan": broken, "ms": 0.10}], other)  # fmt: skip
    cell = sweep.combine([run1, run2])
    assert cell["best"] == other and cell["best_ms"] == pytest.approx(0.95)
    assert cell["chosen_ms"] == pytest.approx(1.05)
    assert cell["chosen_ms_runs"] == [1.00, 1.10] and cell["best_ms_runs"] == [0.90, 1.00]
    assert cell["chosen_over_best"] == pytest.approx(1.05 / 0.95)
    assert cell["chosen_spread"] == pytest.approx(0.10)
    assert cell["best_spread"] == pytest.approx(1.0 / 0.9 - 1)
    assert cell["noise"] == pytest.approx((0.10 + 1.0 / 0.9 - 1) / 2)
    assert cell["same_fastest"] and cell["plans_timed"] == 2 and cell["plans_failed"] == 1
    assert cell["chosen_tbps"] == pytest.approx(1e9 / 1.05e-3 / 1e12)

    single = sweep.combine([run1])
    assert single["best"] == other and single["chosen_over_best"] == pytest.approx(1 / 0.9)
    assert single["chosen_spread"] is None and single["noise"] is None
    assert sweep.spread([1.0, None]) is None and sweep.spread([2.0, 1.0]) == 1.0


@pytest.mark.skipif(not interpreting(), reason="runs the kernels on the interpreter")
@pytest.mark.parametrize("op", list(sweep.OPS))
def test_every_launcher_passes_the_oracle_under_two_plans(op, monkeypatch):
    """Does each op's launch, under the rule's plan and a chunked one, pass the registry's
    oracle through row_plan_grid's check-then-time loop (the timing faked)?"""
    timed = []

    def fake_graph_ms(call, rep_ms):
        timed.append(call())
        return 1.0

    monkeypatch.setattr(sweep.grid.timing, "graph_ms", fake_graph_ms)
    shape, dtype = (5, 3000), torch.float16
    launch, expected, tolerance, logical_bytes = sweep.launcher(op, shape, dtype, 0, "cpu")
    chosen, plans = sweep.cell_plans(op, shape[1], 2)
    chunked = next(p for p in plans if p.chunked)
    whole = chosen if not chosen.chunked else next(p for p in plans if not p.chunked)
    timings = sweep.grid.time_plans(launch, expected, tolerance, dtype, [whole, chunked], 1)
    assert [t.get("error") for t in timings] == [None, None], timings
    assert len(timed) == 2 and logical_bytes > 0
    # a wrong answer is reported, not timed
    wrong = tuple(e + 1 for e in expected) if isinstance(expected, tuple) else expected + 1
    [failed] = sweep.grid.time_plans(launch, wrong, tolerance, dtype, [whole], 1)
    assert "error" in failed and "ms" not in failed and len(timed) == 2


@pytest.mark.parametrize(
    "argv",
    [["--ops", "nope"], ["--shapes", "12x"], ["--repeat", "0"], ["--dtype", "int8"],
     ["--rep-ms", "0"]],
)  # fmt: skip
def test_bad_arguments_are_one_line_and_exit_2(argv, tmp_path, capsys):
    output = tmp_path / "out.json"
    with pytest.raises(SystemExit) as exited:
        sweep.main([*argv, "--output", str(output)])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("row_chunk_sweep.py: error: ")
    assert not output.exists()


@pytest.mark.slow  # ~10 s: every plan of every op, twice, on the interpreter
@pytest.mark.skipif(not interpreting(), reason="runs the whole flow on the interpreter")
def test_the_whole_flow_writes_a_record_that_validates(tmp_path, monkeypatch, capsys):
    """main() with the GPU parts faked (the timing: a plan's ms from its warps): every op, two
    runs, the table printed last, and a script record that validates."""
    from learning.report import load_data, validate_file

    def fake_ms(plan):
        return 0.01 * plan.num_warps + 0.001 * plan.block_cols

    def fake_graph_ms(call, rep_ms):  # no launch: the oracle check launched this plan just now
        return fake_ms(call.keywords["plan"])

    monkeypatch.setattr(sweep.timing, "require_gpu", lambda script: None)
    monkeypatch.setattr(sweep.timing, "warm_gpu", lambda: 0.0)
    monkeypatch.setattr(sweep.timing, "environment", lambda: {"device": "interpreter"})
    monkeypatch.setattr(sweep.timing, "graph_ms", fake_graph_ms)
    output = tmp_path / "sweep.json"
    argv = ["--shapes", "5x3000", "--repeat", "2", "--output", str(output)]
    assert sweep.main(argv) == 0
    out = capsys.readouterr().out
    table = out[out.index("rule's plan against the fastest plan"):]
    assert all(f"\n{op:12s}" in table for op in sweep.OPS)
    assert out.strip().splitlines()[-1] == f"wrote {output}"
    assert validate_file(output) == []
    data = load_data(output)
    assert len(data["runs"]) == 2 and len(data["summary"]) == len(sweep.OPS)
    for cell in data["summary"]:
        assert cell["plans_failed"] == 0, cell
        plans = sweep.cell_plans(cell["op"], 3000, 2)[1]
        assert cell["best_ms"] == pytest.approx(min(map(fake_ms, plans)))
        assert cell["chosen_spread"] == 0.0 and cell["noise"] == 0.0
        assert cell["chosen_over_best"] >= 1.0 and cell["same_fastest"]
    assert data["stability"] == {"runs": 2, "shapes": 6, "same_best_plan": 6}
    assert set(data["scores"]) == {*sweep.OPS, "all"}
