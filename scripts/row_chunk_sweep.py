"""Every row plan at the four shapes the lessons discuss, for every row op (GPU only).

    python3 scripts/row_chunk_sweep.py --ops sum --repeat 2 --output results/h200/chunk-sum.json
    python3 scripts/row_chunk_sweep.py --ops softmax_bwd --dtype bfloat16 --output ...
    python3 scripts/row_chunk_sweep.py --shapes 4096x32768 --ops all --output ...

The comparison of scripts/row_plan_grid.py (whose functions it imports: the candidate plans,
the oracle check and graph-replay timing of each, the score), at four hand-picked shapes
instead of a grid: 16384x4096 (larger than L2), 65536x128 (narrow rows, stacked), 4096x32768
(wide rows: whole row in registers, or chunks) and 1823x781 (irregular), fp16 by default, and
for every row op the row plan serves: the row sum and max, the softmax forward and backward,
the RMSNorm forward and backward. Each candidate plan is checked against the float64 oracle
(the registry's, ``learning.ops``) before it is timed; a failing plan is reported, never timed.

``--repeat 2`` runs the whole sweep (every op, every shape) twice, one pass after the other,
and reports both medians of the rule's plan and of the fastest plan, and their run-to-run
spread; ``noise`` is the median spread over all the plans of a cell. A loss smaller than the
noise is no loss. (The first pass compiles between measurements, leaving the GPU idle for a
moment each time; the second does not: a drift common to every plan between the passes is
that, not noise.) Every compiled plan is kept, so only the first pass compiles; the compiles
(about 0.3-1 s for each of the 59 plans an op has over the four shapes) dominate: one op with
``--repeat 2`` takes under a minute on the H200, all six about five.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
from _records import OneLineParser  # noqa: E402

# isort: split
import row_plan_grid as grid  # noqa: E402
import torch  # noqa: E402

from learning import ops  # noqa: E402
from learning.runtime import default_device  # noqa: E402
from reference.kernels import reductions, rmsnorm  # noqa: E402

SHAPES = ((16384, 4096), (65536, 128), (4096, 32768), (1823, 781))
# op -> (passes, live_rows, streams): the arguments each launcher gives choose_row_plan.
# row_plan_grid holds sum, softmax, softmax_bwd and the RMSNorm forward; max runs the sum's
# plan, the RMSNorm backward keeps BACKWARD_LIVE_ROWS rows live.
OPS = {
    "sum": grid.OPS["sum"],
    "max": grid.OPS["sum"],
    "softmax": grid.OPS["softmax"],
    "softmax_bwd": grid.OPS["softmax_bwd"],
    "rmsnorm": grid.OPS["rmsnorm"],
    "rmsnorm_bwd": (2, rmsnorm.BACKWARD_LIVE_ROWS, 1),
}
# op -> the registry entry that holds its oracle, inputs, tolerances and logical bytes
REGISTRY = {"sum": "sum", "max": "max", "softmax": "softmax", "softmax_bwd": "softmax_train",
            "rmsnorm": "rmsnorm", "rmsnorm_bwd": "rmsnorm_train"}  # fmt: skip


def parse_ops(text: str) -> list[str]:
    """``"sum,max"`` -> ``["sum", "max"]`` (``all``: every op); ValueError in one line."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return list(OPS)
    unknown = [n for n in names if n not in OPS]
    if unknown or not names:
        raise ValueError(f"unknown ops {unknown or text!r}; choose from {', '.join(OPS)} or all")
    return list(dict.fromkeys(names))


def parse_shapes(text: str) -> list[tuple[int, int]]:
    """``"16384x4096,1823x781"`` -> ``[(16384, 4096), (1823, 781)]``; ValueError in one line."""
    shapes = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        parts = item.lower().split("x")
        if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
            raise ValueError(f"shape {item!r} is not ROWSxCOLS with positive integers")
        shapes.append((int(parts[0]), int(parts[1])))
    if not shapes:
        raise ValueError("no shapes given")
    return list(dict.fromkeys(shapes))


def cell_plans(op: str, n_cols: int, element_size: int):
    """``(chosen, plans)``: row_plan_grid's candidates with this op's passes and live rows."""
    passes, live_rows, streams = OPS[op]
    chosen, plans = grid.candidate_plans(n_cols, element_size, passes, live_rows, streams)
    if op == "rmsnorm_bwd":  # its launcher asks the rule for larger stacked tiles
        chosen = rmsnorm.backward_plan(1, n_cols, element_size)
        order = lambda p: (p.chunked, p.block_cols, p.rows_per_program, p.num_warps, p.num_stages)
        # a chunked plan runs the split kernels, whose tiles are the module's, not the plan's:
        # one chunked candidate stands for them all
        split = [p for p in sorted({chosen, *plans}, key=order) if p.chunked][:1]
        if chosen.chunked:
            split = [chosen]
        plans = sorted({chosen, *(p for p in plans if not p.chunked), *split}, key=order)
    return chosen, plans


def launcher(op: str, shape, dtype: torch.dtype, seed: int, device: str):
    """``(launch(plan=...), expected, tolerance, logical_bytes)`` for one op at one shape.

    Inputs, oracle, tolerance and bytes come from the registry; the ops row_plan_grid knows
    (sum, softmax, softmax_bwd, rmsnorm) go through its launcher. ``expected`` is a tuple when the
    launch returns one (the RMSNorm backward: dx and dweight)."""
    spec = ops.get(REGISTRY[op])
    inputs = spec.inputs(shape, dtype, seed, device)
    if op in grid.OPS:
        return grid.launcher(op, inputs["x"].detach())
    if op == "max":
        return (functools.partial(reductions.row_max, inputs["x"]), spec.expected(inputs)[0],
                spec.tolerances[dtype], spec.logical_bytes(shape, dtype))  # fmt: skip
    x, residual, weight = (inputs[k].detach() for k in ("x", "residual", "weight"))
    eps = inputs["eps"]
    # rmsnorm_bwd: the gradients of x (= of residual) and of the weight, from the saved rstd
    rstd = rmsnorm.rmsnorm_fwd(x, residual, weight, eps, save_rstd=True)[1]
    grad_x, _, grad_weight = spec.expected(inputs)
    backward_bytes = spec.logical_bytes(shape, dtype) - ops.get("rmsnorm").logical_bytes(
        shape, dtype
    )  # a training step less its forward
    launch = functools.partial(rmsnorm.rmsnorm_bwd, inputs["grad_output"], x, residual, weight,
                               rstd)  # fmt: skip
    return launch, (grad_x, grad_weight), spec.tolerances[dtype], backward_bytes


def run_cell(op: str, shape, dtype: torch.dtype, seed: int, rep_ms: int) -> dict:
    """Check and time every candidate plan of one op at one shape: row_plan_grid's row."""
    device = default_device()  # cuda (the tests run the flow on the interpreter's cpu)
    launch, expected, tolerance, logical_bytes = launcher(op, shape, dtype, seed, device)
    element_size = torch.empty((), dtype=dtype).element_size()
    chosen, plans = cell_plans(op, shape[1], element_size)
    timings = grid.time_plans(launch, expected, tolerance, dtype, plans, rep_ms)
    row = grid.shape_result(op, shape, dtype, chosen, timings, logical_bytes)
    row["logical_bytes"] = logical_bytes
    print(grid.shape_line(row), flush=True)
    return row


def spread(values) -> float | None:
    """Run-to-run spread of one plan's medians: ``max / min - 1`` (None for a single run)."""
    values = [v for v in values if v]
    return max(values) / min(values) - 1.0 if len(values) > 1 else None


def combine(rows: list[dict]) -> dict:
    """One cell over the runs: each plan's median over the runs, the fastest by that median,
    the rule's loss against it, and the run-to-run spreads (the rule's, the best's, and the
    median over all plans timed in every run: the cell's noise)."""
    first = rows[0]
    per_plan: dict[str, list[float]] = {}
    plans: dict[str, dict] = {}
    for row in rows:
        for entry in row["timings"]:
            key = str(entry["plan"])
            plans[key] = entry["plan"]
            per_plan.setdefault(key, []).append(entry.get("ms"))
    complete = {k: v for k, v in per_plan.items() if len(v) == len(rows) and all(v)}
    medians = {k: statistics.median(v) for k, v in complete.items()}
    chosen_key = str(first["chosen"])
    best_key = min(medians, key=medians.get) if medians else None
    chosen_ms = medians.get(chosen_key)
    best_ms = medians.get(best_key)
    spreads = [s for s in (spread(v) for v in complete.values()) if s is not None]
    logical_bytes = first["logical_bytes"]
    return {
        "op": first["op"], "shape": first["shape"], "dtype": first["dtype"],
        "chosen": first["chosen"], "chosen_ms": chosen_ms,
        "chosen_ms_runs": [r["chosen_ms"] for r in rows],
        "best": plans.get(best_key), "best_ms": best_ms,
        "best_ms_runs": per_plan.get(best_key, []),
        "chosen_over_best": chosen_ms / best_ms if chosen_ms and best_ms else None,
        "chosen_tbps": timing.terabytes_per_second(logical_bytes, chosen_ms),
        "best_tbps": timing.terabytes_per_second(logical_bytes, best_ms),
        "chosen_spread": spread(per_plan.get(chosen_key, [])),
        "best_spread": spread(per_plan.get(best_key, [])),
        "noise": statistics.median(spreads) if spreads else None,
        "fastest_each_run": [r["best"] for r in rows],
        "same_fastest": len({str(r["best"]) for r in rows}) == 1,
        "plans_timed": len(complete), "plans_failed": len(plans) - len(complete),
    }  # fmt: skip


def _ms_runs(values) -> str:
    return " ".join(timing.fmt(v) for v in values)


def _percent(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def print_table(summary: list[dict], repeat: int) -> None:
    runs = (f"the median over {repeat} runs of each run's graph-replay median; runs: each "
            f"run's" if repeat > 1 else "graph-replay medians, one run")  # fmt: skip
    print(f"\nrule's plan against the fastest plan; ms: {runs}")
    print(f"{'op':12s} {'shape':>11s}  {'rule':18s} {'ms':>8s}  {'best':18s} {'ms':>8s}  "
          f"{'loss':>6s} {'TB/s':>5s} {'noise':>6s}  runs (rule | best)")  # fmt: skip
    for row in summary:
        print(
            f"{row['op']:12s} {row['shape']:>11s}  {grid.plan_text(row['chosen'])} "
            f"{timing.fmt(row['chosen_ms']):>8s}  {grid.plan_text(row['best'])} "
            f"{timing.fmt(row['best_ms']):>8s}  x{timing.fmt(row['chosen_over_best'], '.3f')} "
            f"{timing.fmt(row['chosen_tbps'], '5.2f')} {_percent(row['noise']):>6s}  "
            + (f"{_ms_runs(row['chosen_ms_runs'])} | {_ms_runs(row['best_ms_runs'])}"
               + ("" if row["same_fastest"] else "  (fastest plan changed)")
               if repeat > 1 else "")
        )  # fmt: skip


def parse_args(argv=None) -> argparse.Namespace:
    parser = OneLineParser(prog="row_chunk_sweep.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", help="write the JSON here (a script record)")
    parser.add_argument("--ops", default="all", help=f"comma-separated: {','.join(OPS)} or all")
    parser.add_argument("--shapes", default=",".join(f"{r}x{c}" for r, c in SHAPES),
                        help="comma-separated ROWSxCOLS (default: the four lesson shapes)")
    parser.add_argument("--dtype", default="float16", choices=["float16", "bfloat16", "float32"])
    parser.add_argument("--repeat", type=int, default=1, help="run the whole sweep this many times")
    parser.add_argument("--rep-ms", type=int, default=5, help="graph-replay ms per measurement")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        args.ops = parse_ops(args.ops)
        args.shapes = parse_shapes(args.shapes)
    except ValueError as error:
        parser.error(str(error))
    if args.repeat < 1 or args.rep_ms < 1:
        parser.error("--repeat and --rep-ms must be at least 1")
    if args.output and Path(args.output).is_dir():
        parser.error(f"--output {args.output} is a directory")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    timing.require_gpu("row_chunk_sweep.py")
    started = time.perf_counter()
    warm_ms = timing.warm_gpu()
    dtype = ops.dtype_from_name(args.dtype)
    print(f"warmed the GPU for {warm_ms:.0f} ms; {args.dtype}, graph-replay medians")
    runs = []
    for run in range(args.repeat):
        print(f"run {run + 1} of {args.repeat}", flush=True)
        rows = []
        for op in args.ops:
            for shape in args.shapes:
                rows.append(run_cell(op, shape, dtype, args.seed, args.rep_ms))
                torch.cuda.empty_cache()
        runs.append(rows)
        print(f"[{time.perf_counter() - started:.0f} s]", flush=True)
    summary = [combine(list(cell)) for cell in zip(*runs, strict=True)]
    scores = {op: grid.score([r for r in summary if r["op"] == op]) for op in args.ops}
    scores["all"] = grid.score([{**r, "shape": f"{r['op']} {r['shape']}"} for r in summary])
    payload = {"script": "row_chunk_sweep.py", "environment": timing.environment(),
               "args": vars(args), "runs": runs, "summary": summary, "scores": scores}  # fmt: skip
    if len(runs) > 1:
        payload["stability"] = grid.stability(runs)
    print_table(summary, args.repeat)
    overall = scores["all"]
    print(f"\nloss = rule's ms / best ms; noise = median run-to-run spread of the cell's plans. "
          f"Over {overall['shapes']} cells: median x{timing.fmt(overall.get('median_loss'), '.3f')}"
          f", worst x{timing.fmt(overall.get('worst_loss'), '.3f')}; the rule's plan is the "
          f"fastest at {overall.get('chosen_is_best', 0)} of {overall['shapes']}")  # fmt: skip
    if "stability" in payload:
        print(f"same fastest plan in every run at {payload['stability']['same_best_plan']} of "
              f"{payload['stability']['shapes']} cells")  # fmt: skip
    print(f"{time.perf_counter() - started:.0f} s")
    timing.write_json(args.output, payload, script=__file__, argv=argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
