"""Summarise a kernel-bench report: a markdown table, a chart, per-kernel records.

    python scripts/report_results.py results/h200/all.json --output results/h200/all.md \\
        --plot results/h200/all.png --records results/h200/all-records.json

The chart has two panels: each variant's ratio against PyTorch eager per case (above 1 is
faster than eager), and each variant's logical GB/s per case against the H200's measured
streaming ceiling (GEMM cases are left out of that panel: they are compute-bound).

``--records`` writes a JSON list with one record for each variant of each case, in the format
of ``learning/schemas/records-v1.json``::

    {"kernel": "matmul:triton", "gpu": "NVIDIA H200", "vendor": "NVIDIA", "correctness": true,
     "latency_us": 1609.78, "tflops": 683.02, "gbps": null, "vs_pytorch": 1.027,
     "dtype": "bfloat16", "shape": "8192x8192x8192", "status": "pass"}

(``results/h200/gemm-bf16.json``'s Triton GEMM at 8192, its figures rounded here.)

* ``kernel`` is ``op:variant``; ``shape`` the case's dimensions joined by ``x`` (``MxN``, or
  ``MxNxK`` for a GEMM); ``latency_us`` the median in microseconds; ``vs_pytorch`` the report's
  ``ratio_vs_eager`` (eager's median over the variant's).
* ``correctness`` is the report's ``correctness.passed``: true, false, or null when the variant
  was never checked.
* ``status`` comes from the variant's status and its correctness: ``timed`` and passed is
  ``pass``; ``failed`` (it failed the oracle, or could not run) is ``fail``, and so is ``timed``
  without a pass (a report the validator rejects: no record claims a pass it was not given);
  ``skipped`` is ``skipped``.
* A compute-bound op (a GEMM in the op registry, ``learning/ops/``, with FLOPs in its case)
  has ``tflops``, and ``gbps`` null; every other op is memory-bound, with ``gbps`` and
  ``tflops`` null: a case with no FLOPs (``flops`` 0), or an op whose FLOPs are one per element
  (add, sum, max), whose TFLOP/s say nothing about a kernel limited by its memory traffic.

The records are checked against the schema before anything is written. A report that is not
one, or whose records do not fit the schema (an op the registry does not have, a shape of one
dimension), is refused in one line with exit status 2 and no file written. An existing records
file is replaced only with ``--force`` (the markdown and the chart are always rewritten).
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
RECORDS_SCHEMA_PATH = ROOT / "learning" / "schemas" / "records-v1.json"


class RecordsError(ValueError):
    """A report whose records cannot be made or do not fit the schema (one line)."""


def _shape(case: dict) -> str:
    return "x".join(str(d) for d in case["shape"])


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def markdown(report: dict, problems: list[str]) -> str:
    env, settings = report["environment"], report["settings"]
    chosen = settings["op"] if settings.get("suite") is None else (
        f"suite {settings['suite']} (seed {settings.get('suite_seed')})")  # fmt: skip
    lines = [
        f"# kernel-bench: {chosen} on {env.get('gpu_name') or 'CPU (interpreter)'}",
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


def compute_bound(case: dict) -> bool:
    """Whether ``case`` is compute-bound: FLOPs in the case, and a GEMM in the op registry.

    A case without FLOPs is memory-bound whatever its op; one with FLOPs asks the registry
    (imported only then: it imports torch), so an op it does not have is an error.
    """
    if not case["flops"]:
        return False
    from learning import ops

    try:
        return ops.get(case["op"]).is_gemm
    except ValueError as error:
        where = f"{case['op']} {_shape(case)} {case['dtype']}"
        raise RecordsError(f"{where}: compute- or memory-bound? {error}") from None


def _status(variant: dict) -> str:
    if variant["status"] == "skipped":
        return "skipped"
    passed = variant["correctness"].get("passed") is True
    return "pass" if variant["status"] == "timed" and passed else "fail"


def records(report: dict) -> list[dict]:
    """One record for each variant of each case, in the format of ``records-v1.json``."""
    gpu = report["environment"].get("gpu_name") or "cpu-interpreter"
    vendor = "NVIDIA" if report["settings"]["device"] == "cuda" else "none (CPU interpreter)"
    table = []
    for case in report["cases"]:
        compute = compute_bound(case)
        for v in case["variants"]:
            table.append(
                {
                    "kernel": f"{case['op']}:{v['name']}",
                    "gpu": gpu,
                    "vendor": vendor,
                    "correctness": v["correctness"].get("passed"),
                    "latency_us": None if v["median_ms"] is None else v["median_ms"] * 1e3,
                    "tflops": v["tflops"] if compute else None,
                    "gbps": None if compute else v["logical_gbps"],
                    "vs_pytorch": v["ratio_vs_eager"],
                    "dtype": case["dtype"],
                    "shape": _shape(case),
                    "status": _status(v),
                }
            )
    return table


def record_problems(table: object) -> list[str]:
    """Where ``table`` departs from ``records-v1.json``, one line each; [] when it fits."""
    import jsonschema  # imported by learning.report's check already, without format libraries

    validator = jsonschema.Draft202012Validator(json.loads(RECORDS_SCHEMA_PATH.read_text()))
    problems = []
    for error in validator.iter_errors(table):  # an array's items in order
        where = "/".join(map(str, error.absolute_path)) or "(top)"
        index = error.absolute_path[0] if error.absolute_path else None
        item = table[index] if isinstance(index, int) else None
        kernel = item.get("kernel") if isinstance(item, dict) else None
        label = f"record {where}" + (f" ({kernel})" if isinstance(kernel, str) else "")
        problems.append(f"{label}: {error.message}")
    return problems


def checked_records(report: dict) -> list[dict]:
    """:func:`records`, or RecordsError in one line when they do not fit the schema."""
    table = records(report)
    problems = record_problems(table)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise RecordsError(f"{problems[0]}{more}")
    return table


def plot(report: dict, path: Path) -> None:
    import matplotlib

    from learning.report import compute_bound

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
            if variant["logical_gbps"] is not None and not compute_bound(case):
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
    parser.add_argument("--force", action="store_true", help="replace an existing --records file")
    args = parser.parse_args(argv)
    try:
        report = json.loads(args.report.read_text())
    except (OSError, ValueError) as error:
        print(f"report_results: cannot read {args.report}: {error}", file=sys.stderr)
        return 2
    from learning.report import schema_problems, validate, write_atomic

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
    table = None
    if args.records:
        if args.records.resolve() == args.report.resolve():
            print(f"report_results: --records {args.records} is the report itself",
                  file=sys.stderr)  # fmt: skip
            return 2
        if args.records.exists() and not args.records.is_file():
            print(f"report_results: --records {args.records} is not a file", file=sys.stderr)
            return 2
        if args.records.exists() and not args.force:
            print(f"report_results: --records {args.records} already exists; pass --force to "
                  "replace it", file=sys.stderr)  # fmt: skip
            return 2
        try:
            table = checked_records(report)
        except RecordsError as error:
            print(f"report_results: {args.report}: nothing written: {error}", file=sys.stderr)
            return 2
    problems = validate(report)
    for problem in problems:
        print(f"report_results: {args.report}: {problem}", file=sys.stderr)
    args.output.write_text(markdown(report, problems))
    if args.plot:
        plot(report, args.plot)
    if table is not None:
        write_atomic(table, args.records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
