"""Summarise a kernel-bench report: a markdown table, a chart, per-kernel records.

    python scripts/report_results.py results/h200/all.json --output results/h200/all.md \\
        --plot results/h200/all.png --records results/h200/all-records.json

The chart has two panels: each variant's ratio against PyTorch eager per case (above 1 is
faster than eager), and each variant's logical GB/s per case against the H200's measured
streaming ceiling (GEMM cases are left out of that panel: they are compute-bound).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

STREAMING_CEILING_GBPS = 4350.0  # measured on the H200 (logical bytes); not the 4.8 TB/s spec


def _shape(case: dict) -> str:
    return "x".join(str(d) for d in case["shape"])


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def markdown(report: dict, problems: list[str]) -> str:
    env, settings = report["environment"], report["settings"]
    lines = [
        f"# kernel-bench: {settings['op']} on {env.get('gpu_name') or 'CPU (interpreter)'}",
        "",
        f"- timing: {settings['timing']}, cache: {settings['cache']}, "
        f"samples {settings['samples']} over {settings['visits']} visits, "
        f"seed {settings['seed']}, impl {settings['impl']}",
        f"- torch {env['torch']}, triton {env['triton']}, CUDA {env.get('cuda')}, driver "
        f"{env.get('driver')}, commit {(env.get('git_commit') or '?')[:10]}"
        f"{' (dirty)' if env.get('git_dirty') else ''}",
        f"- GPU utilization before/after: {report['gpu_utilization_percent']['before']} / "
        f"{report['gpu_utilization_percent']['after']} %; warm-up bursts run: "
        f"{report['warmup']['bursts_run']}",
        f"- complete: {report['complete']}; validation: "
        + ("valid" if not problems else f"{len(problems)} problem(s): {problems[0]}"),
        f"- {report['timing_note']}",
        "",
        "| op | shape | dtype | variant | status | median µs | min µs | max µs | GB/s | TFLOP/s "
        "| vs eager | max abs error |",
        "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for case in report["cases"]:
        for v in case["variants"]:
            median = None if v["median_ms"] is None else v["median_ms"] * 1e3
            low = None if v["min_ms"] is None else v["min_ms"] * 1e3
            high = None if v["max_ms"] is None else v["max_ms"] * 1e3
            status = (
                v["status"] if v["status"] == "timed" else f"{v['status']}: {v.get('reason') or ''}"
            )
            lines.append(
                f"| {case['op']} | {_shape(case)} | {case['dtype']} | {v['name']} | "
                f"{status.replace('|', '/')[:80]} | {_fmt(median, '.2f')} | {_fmt(low, '.2f')} | "
                f"{_fmt(high, '.2f')} | {_fmt(v['logical_gbps'], '.0f')} | "
                f"{_fmt(v['tflops'], '.1f')} | {_fmt(v['ratio_vs_eager'], '.2f')} | "
                f"{_fmt(v['correctness'].get('max_abs_error'), '.2g')} |"
            )
    return "\n".join(lines) + "\n"


def records(report: dict) -> list[dict]:
    gpu = report["environment"].get("gpu_name") or "cpu-interpreter"
    vendor = "NVIDIA" if report["settings"]["device"] == "cuda" else "none (CPU interpreter)"
    table = []
    for case in report["cases"]:
        for v in case["variants"]:
            passed = v["correctness"].get("passed")
            table.append(
                {
                    "kernel": f"{case['op']}:{v['name']}",
                    "gpu": gpu,
                    "vendor": vendor,
                    "correctness": None if passed is None else ("pass" if passed else "fail"),
                    "latency_us": None if v["median_ms"] is None else v["median_ms"] * 1e3,
                    "tflops": v["tflops"],
                    "gbps": v["logical_gbps"],
                    "vs_pytorch": v["ratio_vs_eager"],
                    "dtype": case["dtype"],
                    "shape": case["shape"],
                    "status": v["status"],
                }
            )
    return table


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = report["cases"]
    labels = [f"{c['op']}\n{_shape(c)}\n{c['dtype']}" for c in cases]
    names = list(dict.fromkeys(v["name"] for c in cases for v in c["variants"]))
    width = 0.8 / max(1, len(names))
    figure, (ratios, rates) = plt.subplots(2, 1, figsize=(max(8, 1.1 * len(cases)), 9))
    for offset, name in enumerate(names):
        xs, ratio_values, gbps_values, gbps_xs = [], [], [], []
        for index, case in enumerate(cases):
            variant = next((v for v in case["variants"] if v["name"] == name), None)
            if variant is None or variant["status"] != "timed":
                continue
            x = index + (offset - (len(names) - 1) / 2) * width
            if variant["ratio_vs_eager"] is not None:
                xs.append(x)
                ratio_values.append(variant["ratio_vs_eager"])
            if variant["logical_gbps"] is not None and not case["op"].startswith("matmul"):
                gbps_xs.append(x)
                gbps_values.append(variant["logical_gbps"])
        ratios.bar(xs, ratio_values, width, label=name)
        rates.bar(gbps_xs, gbps_values, width, label=name)
    ratios.axhline(1.0, color="black", linewidth=0.8)
    ratios.set_ylabel("eager median / variant median")
    ratios.set_title(
        f"{report['settings']['op']}: speed against PyTorch eager ({report['settings']['timing']}, "
        f"{report['settings']['cache']} cache)"
    )
    if report["settings"]["device"] == "cuda":
        rates.axhline(
            STREAMING_CEILING_GBPS,
            color="red",
            linestyle="--",
            label=f"measured streaming ceiling {STREAMING_CEILING_GBPS / 1e3:.2f} TB/s",
        )
    rates.set_ylabel("logical GB/s")
    for axis in (ratios, rates):
        axis.set_xticks(range(len(cases)))
        axis.set_xticklabels(labels, fontsize=7)
        axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("report", type=Path)
    parser.add_argument("--output", type=Path, required=True, help="markdown file to write")
    parser.add_argument("--plot", type=Path, help="PNG chart to write")
    parser.add_argument("--records", type=Path, help="JSON list of per-kernel records to write")
    args = parser.parse_args(argv)
    try:
        report = json.loads(args.report.read_text())
    except (OSError, ValueError) as error:
        print(f"report_results: cannot read {args.report}: {error}", file=sys.stderr)
        return 2
    from learning.report import schema_problems, validate

    structural = schema_problems(report)
    if structural:
        print(f"report_results: {args.report} is not a kernel-bench report: {structural[0]}",
              file=sys.stderr)  # fmt: skip
        return 2
    for path in (args.output, args.plot, args.records):
        if path is not None and not path.parent.is_dir():
            print(f"report_results: {path}: directory {path.parent} does not exist",
                  file=sys.stderr)  # fmt: skip
            return 2
    problems = validate(report)
    for problem in problems:
        print(f"report_results: {args.report}: {problem}", file=sys.stderr)
    args.output.write_text(markdown(report, problems))
    if args.plot:
        plot(report, args.plot)
    if args.records:
        args.records.write_text(json.dumps(records(report), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
