"""Every row plan over a grid of row counts x widths: which plan is fastest where (GPU only).

    python3 scripts/row_plan_grid.py --output results/h200/row-plan-grid.json     (~60 s)
    python3 scripts/row_plan_grid.py --op sum --repeat 2 --output ...

For each shape of the grid (fp16 by default) the op's launcher runs every candidate plan
(:func:`candidate_plans`: whole rows with 1-4 stacked row counts and 4-32 warps, and chunked
walks of 2-16K columns), each checked against the float64 oracle, then timed by CUDA-graph
replay. The table gives the fastest plan per shape and how the rule
(:func:`reference.kernels.row_plan.choose_row_plan`) scores against it: ``chosen / best``
per shape, then its median and worst over the grid. ``--repeat 2`` runs the grid twice and
reports how often the fastest plan stayed the same (when it does not, the plans are within
the noise of each other and the rule's "loss" there is noise too).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402
from learning.correctness import compare, compare_all  # noqa: E402
from reference.kernels import rmsnorm  # noqa: E402
from reference.kernels.row_plan import RowPlan, choose_row_plan, next_power_of_two  # noqa: E402

ROW_COUNTS = (1024, 8192, 65536)
WIDTHS = (128, 781, 1024, 4096, 8192, 32768)
MAX_TENSOR_BYTES = 512 * 1024 * 1024  # skip grid points whose input exceeds this
# name -> (passes, live_rows, streams): what each launcher asks choose_row_plan
OPS = {"softmax": (2, 1, 1), "sum": (1, 1, 1), "softmax_bwd": (2, 2, 1),
       "rmsnorm": (2, 1, rmsnorm.FORWARD_STREAMS)}  # fmt: skip


def candidate_plans(
    n_cols: int, element_size: int, passes: int = 2, live_rows: int = 1, streams: int = 1
):
    """``(chosen, plans)``: the rule's plan and every plan worth timing at this width.

    Whole-row plans stack 1..8 rows (tile up to 32 KiB) with 4-32 warps, keeping 2-64 values
    a thread; chunked plans walk 2048-32768 columns with 8-32 warps (a multi-pass op's
    rows of 8192 or more also as one chunk, reread from L2). Plans a kernel cannot
    run (a whole-row plan narrower than the row) are never listed.
    """
    chosen = choose_row_plan(
        1, n_cols, element_size, passes=passes, live_rows=live_rows, streams=streams
    )
    vector = 16 // element_size
    whole = max(vector, next_power_of_two(n_cols))
    plans = {chosen}
    for rows in (1, 2, 4, 8, 16, 32, 64):
        tile = rows * whole
        if tile * element_size > 32 * 1024 and rows > 1:
            continue
        for warps in (4, 8, 16, 32):
            if 2 <= tile // (32 * warps) <= 64 and whole <= 32768:
                plans.add(RowPlan(whole, rows, warps, chunked=False))
    for block in (2048, 4096, 8192, 16384, 32768):
        # a multi-pass kernel may also walk a wide row as one chunk: read it, reduce, reread
        # it from L2, instead of keeping it in registers across the reduction
        if block < whole or (passes > 1 and block == whole >= 8192):
            for warps in (8, 16, 32):
                if vector <= block // (32 * warps) <= 64:
                    plans.add(RowPlan(block, 1, warps, chunked=True))
    order = lambda p: (p.chunked, p.block_cols, p.rows_per_program, p.num_warps, p.num_stages)
    return chosen, sorted(plans, key=order)


def grid_shapes(row_counts=ROW_COUNTS, widths=WIDTHS, element_size: int = 2):
    return [
        (rows, cols) for rows in row_counts for cols in widths
        if rows * cols * element_size <= MAX_TENSOR_BYTES
    ]  # fmt: skip


def launcher(op: str, x: torch.Tensor):
    """``(launch(plan), expected, tolerance, logical_bytes)`` for one op on input ``x``."""
    from reference.kernels import reductions, softmax

    if op == "sum":
        spec = ops.get("sum")
        return (functools.partial(reductions.row_sum, x), spec.expected({"x": x})[0],
                spec.tolerances[x.dtype], spec.logical_bytes(tuple(x.shape), x.dtype))  # fmt: skip
    if op == "rmsnorm":  # x + residual, normalized, times the weight: y only
        generator = torch.Generator(device=x.device).manual_seed(x.shape[1])
        residual = torch.randn(x.shape, device=x.device, generator=generator).to(x.dtype)
        weight = torch.randn(x.shape[1], device=x.device, generator=generator).to(x.dtype)
        inputs = {"x": x, "residual": residual, "weight": weight, "eps": 1e-6}
        spec = ops.get("rmsnorm")

        def launch(plan=None):
            return rmsnorm.rmsnorm_fwd(**inputs, plan=plan)[0]

        return (launch, spec.expected(inputs)[0], spec.tolerances[x.dtype],
                spec.logical_bytes(tuple(x.shape), x.dtype))  # fmt: skip
    spec = ops.get("softmax")
    if op == "softmax":
        return (functools.partial(softmax.softmax_fwd, x), spec.expected({"x": x})[0],
                spec.tolerances[x.dtype], spec.logical_bytes(tuple(x.shape), x.dtype))  # fmt: skip
    y = softmax.softmax_fwd(x)
    dy = torch.randn_like(x)
    expected = y.double() * (dy.double() - (y.double() * dy.double()).sum(-1, keepdim=True))
    return (functools.partial(softmax.softmax_bwd, y, dy), expected,
            ops.get("softmax_train").tolerances[x.dtype],
            3 * x.numel() * x.element_size())  # fmt: skip


def time_plans(launch, expected, tolerance, dtype, plans, rep_ms: int) -> list[dict]:
    """Check each plan's output against the oracle, then time it: ``{"plan", "ms"}`` per plan,
    or ``{"plan", "error"}`` when it failed the check or raised (out of resources, say).
    ``expected`` is one tensor, or a tuple of them when ``launch`` returns a tuple."""
    timings = []
    for plan in plans:
        entry = {"plan": asdict(plan)}
        try:
            reason = oracle_reason(launch(plan=plan), expected, tolerance, dtype)
            if not reason:
                entry["ms"] = timing.graph_ms(functools.partial(launch, plan=plan), rep_ms)
            else:
                entry["error"] = reason[:200]
        except Exception as error:  # out of resources, say
            entry["error"] = repr(error)[:200]
        timings.append(entry)
    return timings


def oracle_reason(output, expected, tolerance, dtype) -> str:
    """Why ``output`` fails the float64 oracle ``expected`` (tuples element by element), or ""."""
    if isinstance(expected, tuple):
        labels = [f"output {i}" for i in range(len(expected))]
        verdicts = compare_all(tuple(output), expected, tolerance, dtype=dtype, labels=labels)
    else:
        verdicts = [compare(output, expected, tolerance, dtype=dtype)]
    return "; ".join(v.reason for v in verdicts if not v.passed)


def shape_result(op, shape, dtype, chosen: RowPlan, timings: list[dict], logical_bytes) -> dict:
    """One shape's row: the rule's plan and time, the fastest plan, ``chosen / best``, TB/s."""
    timed = [t for t in timings if "ms" in t]
    best = min(timed, key=lambda t: t["ms"]) if timed else None
    chosen_ms = next((t["ms"] for t in timed if t["plan"] == asdict(chosen)), None)
    return {
        "op": op, "shape": f"{shape[0]}x{shape[1]}", "dtype": ops.dtype_name(dtype),
        "chosen": asdict(chosen), "chosen_ms": chosen_ms,
        "best": best["plan"] if best else None, "best_ms": best["ms"] if best else None,
        "chosen_over_best": chosen_ms / best["ms"] if best and chosen_ms else None,
        "chosen_tbps": timing.terabytes_per_second(logical_bytes, chosen_ms),
        "best_tbps": timing.terabytes_per_second(logical_bytes, best["ms"] if best else None),
        "timings": timings,
    }  # fmt: skip


def shape_line(row: dict) -> str:
    return (
        f"  {row['op']:12s} {row['shape']:>12s}  chosen {plan_text(row['chosen'])} "
        f"{timing.fmt(row['chosen_ms'])} ms  best {plan_text(row['best'])} "
        f"{timing.fmt(row['best_ms'])} ms ({timing.fmt(row['best_tbps'], '.2f')} TB/s)  "
        f"loss x{timing.fmt(row['chosen_over_best'], '.3f')}"
    )


def run_grid(op: str, dtype: torch.dtype, seed: int, rep_ms: int) -> list[dict]:
    passes, live_rows, streams = OPS[op]
    element_size = torch.empty((), dtype=dtype).element_size()
    results = []
    for shape in grid_shapes(element_size=element_size):
        generator = torch.Generator(device="cuda").manual_seed(seed)
        x = torch.randn(shape, device="cuda", generator=generator).to(dtype)
        launch, expected, tolerance, logical_bytes = launcher(op, x)
        chosen, plans = candidate_plans(shape[1], element_size, passes, live_rows, streams)
        timings = time_plans(launch, expected, tolerance, dtype, plans, rep_ms)
        row = shape_result(op, shape, dtype, chosen, timings, logical_bytes)
        print(shape_line(row), flush=True)
        results.append(row)
    return results


def plan_text(plan: dict | None) -> str:
    if not plan:
        return "-"
    rows, cols = plan["rows_per_program"], plan["block_cols"]
    kind = f"chunk {cols}" if plan["chunked"] else f"{rows}x{cols}"
    return f"[{kind} w{plan['num_warps']}]".ljust(18)


def score(rows: list[dict]) -> dict:
    """How the rule did against the best plan: median and worst ``chosen / best``."""
    losses = [r["chosen_over_best"] for r in rows if r["chosen_over_best"]]
    if not losses:
        return {"shapes": 0}
    worst = max(rows, key=lambda r: r["chosen_over_best"] or 0)
    return {
        "shapes": len(losses), "median_loss": statistics.median(losses), "worst_loss": max(losses),
        "worst_shape": worst["shape"], "chosen_is_best": sum(1 for x in losses if x <= 1.0),
    }  # fmt: skip


def stability(runs: list[list[dict]]) -> dict:
    """How often the fastest plan was the same plan in every run, shape by shape."""
    same = sum(1 for rows in zip(*runs, strict=True) if len({str(r["best"]) for r in rows}) == 1)
    return {"runs": len(runs), "shapes": len(runs[0]), "same_best_plan": same}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", help="write the JSON here")
    parser.add_argument("--op", choices=sorted(OPS), default="softmax")
    parser.add_argument("--dtype", default="float16", choices=["float16", "bfloat16", "float32"])
    parser.add_argument("--repeat", type=int, default=1, help="run the grid this many times")
    parser.add_argument("--rep-ms", type=int, default=5, help="graph-replay ms per measurement")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    timing.require_gpu("row_plan_grid.py")
    started = time.perf_counter()
    timing.warm_gpu()
    dtype = ops.dtype_from_name(args.dtype)
    runs = []
    for run in range(args.repeat):
        print(f"run {run + 1} of {args.repeat}: {args.op} {args.dtype}, graph-replay medians")
        runs.append(run_grid(args.op, dtype, args.seed, args.rep_ms))
        summary = score(runs[-1])
        print(
            f"rule against the best plan: median x{timing.fmt(summary.get('median_loss'), '.3f')}, "
            f"worst x{timing.fmt(summary.get('worst_loss'), '.3f')} "
            f"at {summary.get('worst_shape')}; "
            f"chosen is the best at {summary.get('chosen_is_best')} of {summary['shapes']} shapes\n"
        )
    payload = {"script": "row_plan_grid.py", "environment": timing.environment(),
               "args": vars(args), "runs": runs, "scores": [score(r) for r in runs]}  # fmt: skip
    if len(runs) > 1:
        payload["stability"] = stability(runs)
        print(f"same fastest plan in every run at {payload['stability']['same_best_plan']} of "
              f"{payload['stability']['shapes']} shapes")  # fmt: skip
    print(f"{time.perf_counter() - started:.0f} s")
    timing.write_json(args.output, payload, script=__file__, argv=argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
