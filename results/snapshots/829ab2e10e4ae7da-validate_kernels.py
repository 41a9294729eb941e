"""Check every reference kernel against the float64 oracle, count compiles, and time it roughly.

For each op of the registry (``learning.ops.OPS``, or those named by ``--ops``), each shape
(the default shapes on a GPU, the small CPU shapes under the interpreter) and each dtype:
run the reference implementation through ``spec.call`` (training ops: forward + autograd
backward), compare with ``spec.expected`` (the float64 oracle, computed on the same device)
under the op's tolerance, and print one row. A module not written yet is reported as
``missing``; it does not fail the run. Any other failure makes the exit status 1.

It also counts each kernel's compiled variants after calls at two row counts (GEMM: two M)
of one width: the second count should add none. On CUDA it adds a quick timing column
(``triton.testing.do_bench_cudagraph``, median) for the reference kernel and the registry's
first baseline, with logical TB/s from ``spec.logical_bytes``. That column is for tuning only:
inputs stay in L2 between graph replays of small shapes, and nothing is interleaved or
repeated. The course's benchmark (``kernel-bench``) is the measurement.

``--sweep-plans`` also times the row kernels under alternative row plans at every default
shape and reports the fastest against the plan the rule chose (fp16 unless ``--dtypes``).

Usage, from the repository root:

    python3 scripts/validate_kernels.py --output results/local/validate-kernels.json
    python3 scripts/validate_kernels.py --ops softmax,softmax_train --sweep-plans --output ...
"""

import argparse
import functools
import inspect
import sys
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import learning  # noqa: E402,F401  (chooses compiled or interpreted Triton before it is imported)

# isort: split
import torch  # noqa: E402
import triton  # noqa: E402
from _records import environment, write_output  # noqa: E402  (scripts/_records.py)

from learning import ops  # noqa: E402
from learning.correctness import compare_all, output_labels  # noqa: E402
from learning.runtime import backend, default_device  # noqa: E402

IMPL = "reference"


# --------------------------------------------------------------------------- loading


def load(spec: ops.OpSpec):
    """``(function, status)``: status is ``ok``, ``missing`` (module not written) or an error."""
    module_name = f"{IMPL}.{spec.module}"
    try:
        return spec.kernel_function(IMPL), "ok"
    except ModuleNotFoundError as error:
        if error.name and module_name.startswith(error.name):
            return None, "missing"
        return None, f"import error: {error!r}"
    except Exception as error:  # a syntax error or a failing import inside the module
        return None, f"import error: {error!r}"


# --------------------------------------------------------------------------- one case


def synchronize() -> None:
    if torch.cuda.is_available() and backend() == "cuda":
        torch.cuda.synchronize()


def time_ms(call, rep_ms: int = 20) -> float | None:
    """Median milliseconds of one call under CUDA-graph replay (None under the interpreter)."""
    if backend() != "cuda":
        return None
    return float(triton.testing.do_bench_cudagraph(call, rep=rep_ms, return_mode="median"))


def terabytes_per_second(spec, shape, dtype, ms):
    if not ms:
        return None
    return spec.logical_bytes(shape, dtype) / (ms * 1e-3) / 1e12


def check_case(spec, function, shape, dtype, seed, device, timing) -> dict:
    row = {
        "op": spec.name, "shape": spec.shape_label(shape), "dtype": ops.dtype_name(dtype),
        "status": "failed", "reason": "", "tolerance_used": None, "max_abs_error": None,
    }  # fmt: skip
    inputs = spec.inputs(shape, dtype, seed, device)
    try:
        actual = spec.call(function, inputs)
        synchronize()
    except Exception as error:
        row["reason"] = f"raised {error!r}"[:400]
        return row
    verdicts = compare_all(
        actual, spec.expected(inputs), spec.tolerances[dtype], dtype=dtype,
        labels=output_labels(spec),
    )  # fmt: skip
    row["tolerance_used"] = max((v.tolerance_used or 0.0) for v in verdicts)
    row["max_abs_error"] = max((v.max_abs_error or 0.0) for v in verdicts)
    row["reason"] = "; ".join(v.reason for v in verdicts if not v.passed)
    row["status"] = "passed" if all(v.passed for v in verdicts) else "failed"
    del actual
    if timing and row["status"] == "passed" and backend() == "cuda":
        baseline_name, baseline = next(iter(spec.baselines.items()))
        row["reference_ms"] = time_ms(lambda: spec.call(function, inputs))
        row["baseline"] = baseline_name
        row["baseline_ms"] = time_ms(lambda: spec.call(baseline, inputs))
        row["reference_tbps"] = terabytes_per_second(spec, shape, dtype, row["reference_ms"])
        row["baseline_tbps"] = terabytes_per_second(spec, shape, dtype, row["baseline_ms"])
        row["speedup"] = row["baseline_ms"] / row["reference_ms"]
    return row


# --------------------------------------------------------------------------- compiles


def jit_functions(module) -> dict:
    """The module's ``@triton.jit`` kernels by name (unwrapping autotuners and heuristics)."""
    kernels = {}
    for name, value in vars(module).items():
        for _ in range(4):  # Autotuner(Heuristics(JITFunction)) at most
            if isinstance(value, triton.runtime.JITFunction):
                kernels[name] = value
                break
            value = getattr(value, "fn", None)
    return kernels


def compiled_variants(kernel) -> int:
    return sum(len(caches[0]) for caches in kernel.device_caches.values())


def count_compiles(spec, function, device, seed) -> dict:
    """Variants per kernel after calls at two row counts (GEMM: two M) of the first shape."""
    if backend() != "cuda":
        return {"op": spec.name, "note": "interpreter: nothing is compiled"}
    shape = spec.default_shapes[0]
    other = (shape[0] // 2 + 1, *shape[1:])  # a row count of different divisibility
    kernels = jit_functions(spec.implementation(IMPL))
    counts = {}
    for label, case_shape in (("first", shape), ("second", other)):
        spec.call(function, spec.inputs(case_shape, torch.float16, seed, device))
        synchronize()
        counts[label] = {name: compiled_variants(k) for name, k in kernels.items()}
    grew = {n: counts["second"][n] - counts["first"][n] for n in kernels}
    return {
        "op": spec.name, "dtype": "float16",
        "shapes": [spec.shape_label(shape), spec.shape_label(other)],
        "variants_after_first": counts["first"], "variants_after_second": counts["second"],
        "new_compiles_at_second": grew, "recompiled": any(v > 0 for v in grew.values()),
    }  # fmt: skip


# --------------------------------------------------------------------------- plan sweep


def sweep_targets(spec):
    """``(label, prepare(inputs) -> args, launch(*args, plan=...), passes, live_rows)``."""
    try:
        module = spec.implementation(IMPL)
    except Exception:
        return []
    if spec.name == "sum":  # max runs the same plan
        launch = getattr(module, spec.function)
        return [(spec.name, lambda inputs: (inputs["x"],), launch, 1, 1)]
    if spec.name == "softmax":
        return [("softmax forward", lambda inputs: (inputs["x"],), module.softmax_fwd, 2, 1)]
    if spec.name == "softmax_train":

        def prepare(inputs):
            return module.softmax_fwd(inputs["x"].detach()), inputs["grad_output"]

        return [("softmax backward", prepare, module.softmax_bwd, 2, 2)]
    launch = getattr(module, "rmsnorm_fwd", None)
    if spec.name == "rmsnorm" and launch and "plan" in inspect.signature(launch).parameters:

        def prepare(inputs):
            return inputs["x"], inputs["residual"], inputs["weight"], inputs["eps"]

        return [("rmsnorm forward", prepare, launch, 2, 1)]
    return []


def candidate_plans(n_cols: int, element_size: int, passes: int, live_rows: int):
    from reference.kernels.row_plan import RowPlan, choose_row_plan, next_power_of_two

    chosen = choose_row_plan(1, n_cols, element_size, passes=passes, live_rows=live_rows)
    vector = 16 // element_size
    whole = max(vector, next_power_of_two(n_cols))
    plans = {chosen}
    if whole * element_size <= 128 * 1024:
        stacked = chosen.rows_per_program if not chosen.chunked else 1
        for rows in {max(1, stacked // 2), stacked, stacked * 2}:
            for warps in (4, 8, 16, 32):
                if rows * whole // (32 * warps) <= 64 and rows * whole >= 32 * warps:
                    plans.add(RowPlan(whole, rows, warps, chunked=False))
    for block in (2048, 4096, 8192, 16384):
        if block < whole:
            for warps in (8, 16, 32):
                for stages in (1, 2):
                    if vector <= block // (32 * warps) <= 32:
                        plans.add(RowPlan(block, 1, warps, chunked=True, num_stages=stages))
    order = lambda p: (p.chunked, p.block_cols, p.rows_per_program, p.num_warps, p.num_stages)
    return chosen, sorted(plans, key=order)


def sweep(spec, dtypes, device, seed) -> list[dict]:
    results = []
    for label, prepare, launch, passes, live_rows in sweep_targets(spec):
        for shape in spec.default_shapes:
            for dtype in dtypes:
                arguments = prepare(spec.inputs(shape, dtype, seed, device))
                element_size = torch.empty((), dtype=dtype).element_size()
                chosen, plans = candidate_plans(shape[1], element_size, passes, live_rows)
                timings = []
                for plan in plans:
                    call = functools.partial(launch, *arguments, plan=plan)
                    try:
                        ms = time_ms(call, rep_ms=10)
                    except Exception as error:  # out of resources for this plan, say
                        timings.append({"plan": asdict(plan), "error": repr(error)[:200]})
                        continue
                    timings.append({"plan": asdict(plan), "ms": ms})
                timed = [t for t in timings if "ms" in t]
                best = min(timed, key=lambda t: t["ms"]) if timed else None
                chosen_ms = next((t["ms"] for t in timed if t["plan"] == asdict(chosen)), None)
                bytes_moved = spec.logical_bytes(shape, dtype)  # the op's own count, for scale
                results.append({
                    "target": label, "shape": spec.shape_label(shape),
                    "dtype": ops.dtype_name(dtype),
                    "chosen": asdict(chosen), "chosen_ms": chosen_ms,
                    "best": best["plan"] if best else None, "best_ms": best["ms"] if best else None,
                    "chosen_over_best": (chosen_ms / best["ms"]) if best and chosen_ms else None,
                    "op_logical_bytes": bytes_moved, "timings": timings,
                })  # fmt: skip
                row = results[-1]
                print(
                    f"  sweep {label:18s} {row['shape']:>12s} {row['dtype']:9s} chosen "
                    f"{_fmt(chosen_ms, '.4f')} ms, best {_fmt(row['best_ms'], '.4f')} ms "
                    f"{_plan_label(row['best'])}",
                    flush=True,
                )
    return results


def _plan_label(plan: dict | None) -> str:
    if not plan:
        return "-"
    kind = "chunked" if plan["chunked"] else f"{plan['rows_per_program']} rows"
    return (
        f"[{kind}, block {plan['block_cols']}, {plan['num_warps']} warps, "
        f"{plan['num_stages']} stages]"
    )


# --------------------------------------------------------------------------- report


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


COLUMNS = (
    ("op", 14, "s"), ("shape", 16, "s"), ("dtype", 9, "s"), ("status", 8, "s"),
    ("tolerance_used", 9, ".3f"), ("max_abs_error", 10, ".2e"),
    ("reference_ms", 9, ".4f"), ("reference_tbps", 8, ".2f"),
    ("baseline_ms", 9, ".4f"), ("baseline_tbps", 8, ".2f"), ("speedup", 7, ".2f"),
)  # fmt: skip
HEADERS = {
    "tolerance_used": "tol_used", "max_abs_error": "max_err", "reference_ms": "ref_ms",
    "reference_tbps": "ref_TB/s", "baseline_ms": "base_ms", "baseline_tbps": "base_TB/s",
}  # fmt: skip


def print_header() -> None:
    print(" ".join(f"{HEADERS.get(name, name):>{width}}" for name, width, _ in COLUMNS))


def print_row(row: dict) -> None:
    cells = []
    for name, width, spec in COLUMNS:
        value = row.get(name)
        cells.append(f"{(value if spec == 's' else _fmt(value, spec)) or '-':>{width}}")
    line = " ".join(cells)
    if row.get("reason"):
        line += f"  {row['reason']}"
    print(line, flush=True)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--ops",
        default="all,training",
        help="comma-separated op or group names (default: every op)",
    )
    parser.add_argument("--dtypes", default="", help="comma-separated dtypes (default: each op's)")
    parser.add_argument("--output", type=Path, help="write the JSON report here")
    parser.add_argument("--seed", type=int, default=20240)
    parser.add_argument("--no-timing", action="store_true", help="skip the CUDA timing columns")
    parser.add_argument(
        "--sweep-plans",
        action="store_true",
        help="also time alternative row plans (CUDA only; a few minutes)",
    )
    return parser.parse_args(argv)  # fmt: skip


def main(argv=None) -> int:
    args = parse_args(argv)
    ops.numerics_policy()
    specs = []
    try:
        for name in filter(None, args.ops.split(",")):
            specs += [s for s in ops.resolve(name.strip()) if s not in specs]
        chosen_dtypes = [
            ops.dtype_from_name(d.strip()) for d in args.dtypes.split(",") if d.strip()
        ]
    except ValueError as error:
        print(f"validate_kernels: {error}", file=sys.stderr)
        return 2
    device = default_device()
    on_gpu = backend() == "cuda"
    print(f"backend: {backend()}  device: {device}  torch {torch.__version__}  "
          f"triton {triton.__version__}")  # fmt: skip
    started = time.perf_counter()

    rows, compiles, sweeps = [], [], []
    print_header()
    for index, spec in enumerate(specs):
        function, status = load(spec)
        if function is None:
            row = {"op": spec.name, "shape": "*", "dtype": "*", "status": "missing", "reason": ""}
            if status != "missing":
                row.update(status="error", reason=status)
            rows.append(row)
            print_row(row)
            continue
        shapes = spec.default_shapes if on_gpu else spec.cpu_shapes
        dtypes = [d for d in spec.dtypes if not chosen_dtypes or d in chosen_dtypes]
        for shape in shapes:
            for dtype in dtypes:
                seed = args.seed + 1000 * index + len(rows)
                try:
                    row = check_case(spec, function, shape, dtype, seed, device, not args.no_timing)
                except Exception as error:  # the oracle or the timing itself failed
                    row = {"op": spec.name, "shape": spec.shape_label(shape),
                           "dtype": ops.dtype_name(dtype), "status": "error",
                           "reason": repr(error)[:400]}  # fmt: skip
                rows.append(row)
                print_row(row)
        try:
            compiles.append(count_compiles(spec, function, device, args.seed))
        except Exception as error:
            compiles.append({"op": spec.name, "error": repr(error)[:400]})
        if on_gpu:
            torch.cuda.empty_cache()

    print("\ncompiled variants per kernel after calls at two row counts (GEMM: two M):")
    for entry in compiles:
        if "variants_after_second" in entry:
            first, second = entry["variants_after_first"], entry["variants_after_second"]
            detail = ", ".join(f"{name} {first[name]}->{second[name]}" for name in second)
            flag = "RECOMPILED" if entry["recompiled"] else "no recompile"
            print(f"  {entry['op']:14s} {' then '.join(entry['shapes'])}: {flag}; {detail}")
        else:
            print(f"  {entry['op']:14s} {entry.get('note') or entry.get('error')}")

    if args.sweep_plans and on_gpu:
        print("\nrow plan sweep (chosen plan against the fastest candidate):")
        sweep_dtypes = chosen_dtypes or [torch.float16]
        for spec in specs:
            sweeps += sweep(spec, sweep_dtypes, device, args.seed)

    failed = [r for r in rows if r["status"] in ("failed", "error")]
    missing = sorted({r["op"] for r in rows if r["status"] == "missing"})
    elapsed = time.perf_counter() - started
    print(
        f"\n{len(rows) - len(failed) - len(missing)} passed, {len(failed)} failed"
        f"{', missing: ' + ', '.join(missing) if missing else ''} in {elapsed:.0f} s"
    )
    if args.output:
        report = {
            "environment": environment(), "seed": args.seed, "elapsed_s": elapsed,
            "cases": rows, "compiles": compiles, "plan_sweep": sweeps,
            "note": "timings are CUDA-graph medians for tuning, not the course's benchmark",
        }  # fmt: skip
        # a script record (non-finite floats become null), written atomically once all is measured
        write_output(args.output, __file__, report, argv=argv)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
