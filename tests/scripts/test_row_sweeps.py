"""Do the row-tuning scripts enumerate sensible plans, score the rule honestly, refuse a CPU?"""

import sys
from pathlib import Path

import pytest
import warm_python

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import row_plan_grid  # noqa: E402

from learning.runtime import interpreting  # noqa: E402
from reference.kernels.add import MIN_PROGRAMS, choose_block  # noqa: E402
from reference.kernels.row_plan import RowPlan  # noqa: E402


@pytest.mark.parametrize("n_cols", row_plan_grid.WIDTHS)
@pytest.mark.parametrize("passes, live_rows, streams", sorted(set(row_plan_grid.OPS.values())))
def test_candidates_include_the_rule_and_only_runnable_plans(n_cols, passes, live_rows, streams):
    """Is the rule's plan among the candidates, and does every whole-row plan cover the row?"""
    chosen, plans = row_plan_grid.candidate_plans(n_cols, 2, passes, live_rows, streams)
    assert chosen in plans
    assert len(plans) == len(set(plans)), "a plan is listed twice"
    for plan in plans:
        assert isinstance(plan, RowPlan)
        if plan.chunked:  # a multi-pass op may walk a wide row as one chunk, read twice
            one_chunk = passes > 1 and plan.block_cols == n_cols >= 8192
            assert (plan.block_cols < n_cols or one_chunk) and plan.rows_per_program == 1, plan
        else:
            assert plan.block_cols >= n_cols, plan


def test_grid_skips_huge_tensors():
    """Are grid points above the size cap left out?"""
    shapes = row_plan_grid.grid_shapes(element_size=2)
    assert all(r * c * 2 <= row_plan_grid.MAX_TENSOR_BYTES for r, c in shapes)
    assert (65536, 32768) not in shapes and (1024, 128) in shapes


def test_score_reports_median_and_worst_loss():
    """Does the score name the worst shape and count the shapes where the rule was best?"""
    rows = [
        {"shape": "a", "chosen_over_best": 1.0},
        {"shape": "b", "chosen_over_best": 1.2},
        {"shape": "c", "chosen_over_best": 1.05},
        {"shape": "d", "chosen_over_best": None},
    ]
    summary = row_plan_grid.score(rows)
    assert summary["shapes"] == 3 and summary["worst_shape"] == "b"
    assert summary["median_loss"] == pytest.approx(1.05) and summary["chosen_is_best"] == 1


def test_add_block_shrinks_for_small_tensors_only():
    """Do small tensors get enough programs, and large ones keep 16 KiB blocks (fp32: 4 KiB,
    one 16-byte vector a thread of 8 warps, as streaming-plans.log chose)?"""
    assert choose_block(16384 * 4096, 2) == (8192, 8)
    assert choose_block(16384 * 4096, 4) == choose_block(4096 * 32768, 4) == (1024, 8)
    assert choose_block(1024 * 1024, 4) == (1024, 8)
    assert choose_block(1024 * 1023, 4) == (512, 4)
    assert choose_block(65536 * 128, 2) == (8192, 8)
    block, warps = choose_block(1823 * 781, 2)
    assert -(-1823 * 781 // block) >= MIN_PROGRAMS and warps == 4
    assert choose_block(7, 4) == (512, 4)  # the smallest block: 2 KiB


@pytest.mark.skipif(not interpreting(), reason="checks the CPU refusal")
@pytest.mark.parametrize("script", ["row_plan_grid.py", "wrapper_overhead.py"])
def test_gpu_scripts_refuse_a_cpu_in_one_line(script):
    """Does a GPU-only script exit 2 with one line instead of timing the interpreter?"""
    done = warm_python.run(
        [sys.executable, str(ROOT / "scripts" / script)], capture_output=True, text=True,
        timeout=120, cwd=ROOT,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(done.stdout.strip().splitlines()) == 1 and "GPU" in done.stdout
