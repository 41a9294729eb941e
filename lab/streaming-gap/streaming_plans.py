"""Which launch plan closes the streaming gap to torch.compile? (GPU, ~3 min)

    python3 lab/streaming-gap/streaming_plans.py --output results/h200/streaming-plans.json

Paired by round, torch.compile beats the reference's row sum at 4096 x 32768 in every dtype
and its fp32 ``add``, ``sum`` and ``max`` by 0.3-0.7% (``results/NOTES.md``), and neither
of the two code differences Nsight Compute found closes the reductions' gap
(``streaming_variants.py``). What is left is the launch: at 4096 x 32768 fp32 Inductor's
sum runs 4 programs of 512 threads on an SM with 32 registers a thread, where the
reference's 34 registers fit only 3 (``ncu-fp32-sum-4096x32768-*.log``), and Inductor's
fp32 add launches 512- or 1024-element blocks where the reference launches 4096.

For each case this script times the rule's plan (twice: an A/A pair), a set of other plans
and torch.compile (``dynamic=False``), every output checked against the float64 oracle,
all interleaved with every graph captured first, and prints the ratio of medians and the
ratio paired by round against compile, with the rounds lost and a sign test
(``streaming_variants.paired_rows``).

* Row reductions: chunked walks of 8, 16 and 32 KiB of a row a step, each with the warps that
  give a thread one or two 16-byte vectors a step (:func:`reduction_plans`), and the rule's
  plan with two pipeline stages.
* ``add``: blocks of 2-16 KiB an operand, with 4 and 8 warps (:func:`add_blocks`).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))  # the shared helpers

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
from _paired_rows import paired_rows, print_table  # noqa: E402
from _records import OneLineParser, positive_int  # noqa: E402

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402
from learning.bench.variants import fresh_compiled  # noqa: E402
from reference.kernels import add, reductions  # noqa: E402
from reference.kernels.row_plan import VECTOR_BYTES, RowPlan, choose_row_plan  # noqa: E402

CASES = (("sum", (4096, 32768), torch.float32), ("max", (4096, 32768), torch.float32),
         ("sum", (16384, 4096), torch.float32), ("sum", (4096, 32768), torch.float16),
         ("sum", (4096, 32768), torch.bfloat16), ("add", (16384, 4096), torch.float32),
         ("add", (4096, 32768), torch.float32), ("add", (16384, 4096), torch.float16))  # fmt: skip
CHUNK_BYTES = (8 * 1024, 16 * 1024, 32 * 1024)
ADD_BLOCK_BYTES = (2 * 1024, 4 * 1024, 8 * 1024, 16 * 1024)


def plan_label(plan: RowPlan) -> str:
    rows = "chunk " if plan.chunked else f"{plan.rows_per_program}x"
    shape = f"{rows}{plan.block_cols}"
    stages = f", {plan.num_stages} stages" if plan.num_stages > 1 else ""
    return f"{shape} w{plan.num_warps}{stages}"


def reduction_plans(n_cols: int, element_size: int) -> dict[str, RowPlan]:
    """``{label: plan}``: the rule's plan, then chunked walks of every ``CHUNK_BYTES`` no wider
    than the row, with 1 or 2 vectors a thread a step (4-32 warps), then the rule's plan with
    two stages when it walks chunks."""
    rule = choose_row_plan(1, n_cols, element_size, passes=1)
    plans = {f"rule [{plan_label(rule)}]": rule}
    vector = VECTOR_BYTES // element_size
    for chunk_bytes in CHUNK_BYTES:
        cols = chunk_bytes // element_size
        if cols > n_cols:
            continue
        for vectors in (1, 2):
            warps = cols // (32 * vectors * vector)
            if 4 <= warps <= 32 and (plan := RowPlan(cols, 1, warps, True)) not in plans.values():
                plans[plan_label(plan)] = plan
    if rule.chunked:
        staged = replace(rule, num_stages=2)
        plans[plan_label(staged)] = staged
    return plans


def add_blocks(n_elements: int, element_size: int) -> dict[str, tuple[int, int]]:
    """``{label: (block, warps)}``: the rule's block, then every ``ADD_BLOCK_BYTES`` block with
    4 and 8 warps that leaves each thread at least one element."""
    rule = add.choose_block(n_elements, element_size)
    blocks = {f"rule [block {rule[0]} w{rule[1]}]": rule}
    for block_bytes in ADD_BLOCK_BYTES:
        for warps in (4, 8):
            block = block_bytes // element_size
            if block >= 32 * warps and (block, warps) != rule:
                blocks[f"block {block} w{warps}"] = (block, warps)
    return blocks


def case_calls(op: str, inputs: dict) -> dict[str, object]:
    """Every candidate for one case as a zero-argument call, the rule's twice, and compile."""
    args = tuple(inputs.values())
    x = args[0]
    if op == "add":
        blocks = add_blocks(x.numel(), x.element_size())
        candidates = {label: (lambda b=block, w=warps: add.add_fwd(*args, block=b, num_warps=w))
                      for label, (block, warps) in blocks.items()}  # fmt: skip
    else:
        reduce = reductions.row_sum if op == "sum" else reductions.row_max
        plans = reduction_plans(x.shape[1], x.element_size())
        candidates = {label: (lambda p=plan: reduce(x, p)) for label, plan in plans.items()}
    rule = next(iter(candidates.values()))
    calls = {**candidates, "rule again": rule}
    compiled = fresh_compiled(next(iter(ops.get(op).baselines.values())))
    calls["compile"] = lambda: compiled(*args)
    return calls


def main(argv=None) -> int:
    parser = OneLineParser(prog="streaming_plans", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive_int, default=9,
                        help="interleaved rounds (default 9)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the shuffled order of the rounds (default 0)")
    parser.add_argument("--output", help="write the rows as JSON here")
    args = parser.parse_args(argv)
    timing.require_gpu("streaming_plans.py")
    ops.numerics_policy()
    timing.warm_gpu()
    rows = []
    for op, shape, dtype in CASES:
        inputs = ops.get(op).make_inputs(shape, dtype, 0, "cuda")
        rows += paired_rows(op, shape, dtype, inputs, case_calls(op, inputs), args.rounds,
                            args.seed)  # fmt: skip
        del inputs
    print_table(rows)
    timing.write_json(args.output, {"environment": timing.environment(), "seed": args.seed,
                                    "rows": rows}, script=__file__, argv=argv)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
