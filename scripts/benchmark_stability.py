"""How far do Triton/PyTorch ratios move between identical sweeps? (Target: ±2% median, ±5% worst.)

    python scripts/benchmark_stability.py --sweeps 3 --output results/h200/stability.json

Runs the ``all`` sweep ``--sweeps`` times with a warm cache and as often with a cold one, in
one process, through ``learning.bench.run`` (each sweep with its own seed, so the visit order
changes too). For every case's Triton variant it takes the ratio against PyTorch eager in each
sweep; a ratio's deviation is how far it sits from that case's median ratio over the sweeps.
Printed per cache mode: the median and the worst deviation, and the cases that moved most.
GPU only: exits 2 on a CPU.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
SCRIPTS = Path(__file__).resolve().parent
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

TARGET_MEDIAN, TARGET_WORST = 0.02, 0.05


def ratios(report: dict) -> dict[str, float]:
    """``"op shape dtype variant" -> ratio_vs_eager`` for every timed Triton variant."""
    table = {}
    for case in report["cases"]:
        for variant in case["variants"]:
            if variant["kind"] == "triton" and variant["ratio_vs_eager"] is not None:
                shape = "x".join(map(str, case["shape"]))
                key = f"{case['op']} {shape} {case['dtype']} {variant['name']}"
                table[key] = variant["ratio_vs_eager"]
    return table


def deviations(sweeps: list[dict[str, float]]) -> dict[str, list[float]]:
    """Per key present in every sweep: |ratio / median ratio - 1| of each sweep."""
    keys = set.intersection(*(set(s) for s in sweeps)) if sweeps else set()
    table = {}
    for key in sorted(keys):
        values = [s[key] for s in sweeps]
        center = statistics.median(values)
        table[key] = [abs(v / center - 1.0) for v in values]
    return table


def summary(sweeps: list[dict[str, float]]) -> dict:
    table = deviations(sweeps)
    every = [d for values in table.values() for d in values]
    worst_keys = sorted(table, key=lambda k: max(table[k]), reverse=True)[:5]
    return {
        "cases": len(table),
        "median_deviation": statistics.median(every) if every else None,
        "worst_deviation": max(every) if every else None,
        "most_moved": [
            {"case": k, "worst_deviation": max(table[k]), "ratios": [s[k] for s in sweeps]}
            for k in worst_keys
        ],
        "per_sweep_ratios": sweeps,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sweeps", type=int, default=3)
    parser.add_argument("--op", default="all")
    parser.add_argument("--dtype", default="float16")
    parser.add_argument("--samples", type=int, default=9)
    parser.add_argument("--visits", type=int, default=3)
    parser.add_argument("--caches", default="warm,cold", help="comma-separated: warm, cold")
    parser.add_argument("--output", type=Path, help="write the summary as JSON")
    args = parser.parse_args(argv)
    if args.sweeps < 2:
        print("benchmark_stability: --sweeps must be at least 2", file=sys.stderr)
        return 2

    import torch

    import learning  # noqa: F401  (selects the backend)

    if not torch.cuda.is_available():
        print("benchmark_stability: needs a CUDA GPU; there is none here", file=sys.stderr)
        return 2
    from learning.bench import BenchConfig, run

    results = {}
    with tempfile.TemporaryDirectory(prefix="stability-") as scratch:
        for cache in args.caches.split(","):
            sweeps = []
            for sweep in range(args.sweeps):
                print(
                    f"benchmark_stability: {cache} sweep {sweep + 1}/{args.sweeps}",
                    file=sys.stderr,
                    flush=True,
                )
                config = BenchConfig(
                    op=args.op,
                    dtype=args.dtype,
                    cache=cache,
                    samples=args.samples,
                    visits=args.visits,
                    seed=sweep,
                    quiet=True,
                    output=Path(scratch) / f"{cache}-{sweep}.json",
                )
                sweeps.append(ratios(run(config).data))
                torch.cuda.empty_cache()
            results[cache] = summary(sweeps)

    print(f"\n{'cache':>5}  {'cases':>5}  {'median dev':>10}  {'worst dev':>9}  target ±2% / ±5%")
    for cache, s in results.items():
        median, worst = s["median_deviation"], s["worst_deviation"]
        verdict = (
            "met"
            if median is not None and median <= TARGET_MEDIAN and worst <= TARGET_WORST
            else "missed"
        )
        print(
            f"{cache:>5}  {s['cases']:>5}  {100 * (median or 0):>9.2f}%  "
            f"{100 * (worst or 0):>8.2f}%  {verdict}"
        )
        for row in s["most_moved"][:3]:
            shown = ", ".join(f"{r:.3f}" for r in row["ratios"])
            print(
                f"       moved most: {row['case']}: {100 * row['worst_deviation']:.1f}% ({shown})"
            )
    if args.output:
        settings = {
            "op": args.op,
            "dtype": args.dtype,
            "samples": args.samples,
            "visits": args.visits,
            "sweeps": args.sweeps,
            "target_median": TARGET_MEDIAN,
            "target_worst": TARGET_WORST,
        }
        from _records import write_output

        write_output(args.output, __file__, {"settings": settings, "results": results}, argv=argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
