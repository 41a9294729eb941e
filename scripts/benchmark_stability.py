"""How far do Triton/PyTorch ratios move between identical sweeps? (Target: ±2% median, ±5% worst.)

    python scripts/benchmark_stability.py --sweeps 3 --output results/h200/stability.json

Runs the ``all`` sweep ``--sweeps`` times with a warm cache and as often with a cold one, in
one process, through ``learning.bench.run`` (each sweep with its own seed, so the visit order
changes too). For every case's Triton variant it takes the ratio against PyTorch eager in each
sweep; a ratio's deviation is how far it sits from that case's median ratio over the sweeps.
Printed per cache mode: the median and the worst deviation, and the cases that moved most.

The same is done for the paired ratio (``paired_vs_eager``: eager's sample over the variant's
round by round, then the median, with throttled rounds left out), and for the verdicts the
reports record: how many cases got the same verdict in every sweep, and how many rounds
NVML saw throttled in each sweep. GPU only: exits 2 on a CPU.
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


def ratios(report: dict, measure: str = "ratio") -> dict:
    """``"op shape dtype variant" -> figure`` for every timed Triton variant: its
    ``ratio_vs_eager`` (``measure="ratio"``), its paired ratio (``"paired"``) or its verdict
    against eager (``"verdict"``)."""
    table = {}
    for case in report["cases"]:
        for variant in case["variants"]:
            if variant["kind"] != "triton" or variant["ratio_vs_eager"] is None:
                continue
            shape = "x".join(map(str, case["shape"]))
            key = f"{case['op']} {shape} {case['dtype']} {variant['name']}"
            versus = variant.get("paired_vs_eager") or {}
            value = {"ratio": variant["ratio_vs_eager"], "paired": versus.get("paired_ratio"),
                     "verdict": versus.get("verdict")}[measure]  # fmt: skip
            if value is not None:
                table[key] = value
    return table


def verdict_agreement(sweeps: list[dict[str, str]]) -> dict:
    """How many cases got one verdict in every sweep, and the cases that did not."""
    keys = set.intersection(*(set(s) for s in sweeps)) if sweeps else set()
    changed = {key: [s[key] for s in sweeps] for key in sorted(keys)
               if len({s[key] for s in sweeps}) > 1}  # fmt: skip
    return {"cases": len(keys), "same_in_every_sweep": len(keys) - len(changed),
            "changed": changed}


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
            sweeps, paired_sweeps, verdict_sweeps, throttled = [], [], [], []
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
                data = run(config).data
                sweeps.append(ratios(data))
                paired_sweeps.append(ratios(data, "paired"))
                verdict_sweeps.append(ratios(data, "verdict"))
                telemetry = data.get("telemetry", {})
                throttled.append([telemetry.get("flagged_rounds"), telemetry.get("rounds")])
                torch.cuda.empty_cache()
            results[cache] = summary(sweeps)
            results[cache]["paired"] = summary(paired_sweeps)
            results[cache]["verdicts"] = verdict_agreement(verdict_sweeps)
            results[cache]["throttled_rounds"] = throttled

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
        pairs = s["paired"]
        if pairs["median_deviation"] is not None:
            print(f"       paired ratio: median dev {100 * pairs['median_deviation']:.2f}%, "
                  f"worst {100 * pairs['worst_deviation']:.2f}%")  # fmt: skip
            for row in pairs["most_moved"][:3]:
                shown = ", ".join(f"{r:.3f}" for r in row["ratios"])
                print(f"       paired moved most: {row['case']}: "
                      f"{100 * row['worst_deviation']:.1f}% ({shown})")  # fmt: skip
        agreement = s["verdicts"]
        print(f"       verdicts: {agreement['same_in_every_sweep']} of {agreement['cases']} cases "
              f"the same in every sweep; throttled rounds per sweep (flagged, of): "
              f"{s['throttled_rounds']}")  # fmt: skip
        for key, seen in list(agreement["changed"].items())[:5]:
            print(f"       verdict changed: {key}: {', '.join(seen)}")
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
