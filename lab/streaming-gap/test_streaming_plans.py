"""Does streaming_plans.py time plans that are valid, distinct and compute the op?

The plans run in Triton's interpreter on a few rows of the width they were made for (the GPU
timing itself is the script's job)."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import profile_streaming  # noqa: E402
import streaming_plans as probe  # noqa: E402

from learning.runtime import interpreting  # noqa: E402
from reference.kernels import add, reductions  # noqa: E402
from reference.kernels.row_plan import choose_row_plan  # noqa: E402


@pytest.mark.parametrize(("n_cols", "element_size"), [(32768, 4), (4096, 4), (32768, 2)])
def test_the_rule_comes_first_and_every_plan_is_distinct_and_fits_a_thread(n_cols, element_size):
    plans = probe.reduction_plans(n_cols, element_size)
    labels, chosen = list(plans), list(plans.values())
    assert labels[0].startswith("rule [") and chosen[0] == choose_row_plan(
        1, n_cols, element_size, passes=1)  # fmt: skip
    assert len(set(chosen)) == len(chosen) and len(chosen) >= 5
    vector = 16 // element_size
    for plan in chosen[1:]:
        values_a_thread = plan.block_cols // (32 * plan.num_warps)
        assert plan.chunked and plan.block_cols <= n_cols
        assert values_a_thread in (vector, 2 * vector) or plan.num_stages == 2


def test_add_blocks_start_with_the_rule_and_leave_every_thread_an_element():
    blocks = probe.add_blocks(16384 * 4096, 4)
    assert next(iter(blocks.values())) == add.choose_block(16384 * 4096, 4)
    assert len(set(blocks.values())) == len(blocks) == 8
    assert all(block >= 32 * warps for block, warps in blocks.values())


@pytest.mark.skipif(not interpreting(), reason="runs the kernels in the interpreter")
def test_every_plan_sums_and_maxes_and_every_block_adds():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4096, generator=generator)
    for label, plan in probe.reduction_plans(4096, 4).items():
        torch.testing.assert_close(reductions.row_sum(x, plan), x.sum(dim=-1), msg=label)
        torch.testing.assert_close(reductions.row_max(x, plan), x.amax(dim=-1), msg=label)
    a, b = torch.randn(3, 3001, generator=generator), torch.randn(3, 3001, generator=generator)
    for label, (block, warps) in probe.add_blocks(a.numel(), 4).items():
        torch.testing.assert_close(add.add_fwd(a, b, block=block, num_warps=warps), a + b,
                                   msg=label)  # fmt: skip


@pytest.mark.skipif(not interpreting(), reason="runs the kernels in the interpreter")
def test_the_profiler_launches_a_named_plan_and_refuses_an_unknown_one():
    x = torch.randn(3, 4096, generator=torch.Generator().manual_seed(1))
    for label in ("1x4096 w16", "chunk 2048 w16"):  # the rule's plan and another
        run = profile_streaming.plan_function("max", (3, 4096), 4, label)
        torch.testing.assert_close(run(x), x.amax(dim=-1), msg=label)
    y = torch.randn(3, 4096)
    run = profile_streaming.plan_function("add", (3, 4096), 4, "block 512 w4")
    torch.testing.assert_close(run(x, y), x + y)
    with pytest.raises(ValueError, match="one of: 1x4096 w16, chunk 2048 w16"):
        profile_streaming.plan_function("sum", (3, 4096), 4, "chunk 999 w3")


@pytest.mark.skipif(not interpreting(), reason="runs the kernels in the interpreter")
def test_the_profiler_rewrites_compute_their_op(tmp_path):
    from learning import ops

    for index, (label, entry) in enumerate(profile_streaming.REWRITES.items()):
        op, module, rewrites, name = entry
        variant = profile_streaming.rewritten(module, rewrites, tmp_path, f"rewrite_{index}")
        function = getattr(variant, name)
        spec = ops.get(op)
        args = tuple(spec.make_inputs((3, 1000), torch.float32, 0, "cpu").values())
        torch.testing.assert_close(function(*args), spec.kernel_function("reference")(*args),
                                   msg=label)  # fmt: skip
