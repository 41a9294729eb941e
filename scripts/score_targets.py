"""Score the "every case" target from recorded reports: where the reference kernels lose.

    python scripts/score_targets.py results/h200/all.json results/h200/all-cold.json
    python scripts/score_targets.py --check results/h200/target-scores.log   # CI: still true?
    python scripts/score_targets.py --write results/h200/target-scores.log

No GPU needed: it reads kernel-bench reports. The target: in every memory-bound case of the
default sweep (every op but the GEMM), the reference kernel's median is no slower than the
faster of PyTorch eager and torch.compile. For each case it prints ``ratio`` = that
baseline's median / the reference's (>= 1: met). A case behind is then described by two
facts the report itself holds, never by judgement:

* ``ranges``: whether the two variants' samples overlap (the reference's fastest sample is
  no slower than the baseline's slowest). If they do, the sweep's own spread is as large as
  the difference: the order of the two medians can change from one sweep to the next.
* ``of ceiling``: the reference's logical bandwidth as a share of the streaming ceiling
  measured on the H200 (``--ceiling-gbps``, 4350): near 100 % no kernel can be much faster.

One summary line per report: cases, met, behind with overlapping samples, behind beyond them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from _records import OneLineParser

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_REPORTS = ("results/h200/all.json", "results/h200/all-cold.json")
CEILING_GBPS = 4350.0  # fp16 add, 16384 x 4096, graph replay: the H200's measured ceiling
BASELINES = ("torch", "compile")


def fail(message: str):
    """One line on stderr, exit 2: how every maintainer script answers bad input."""
    print(f"score_targets: {message}", file=sys.stderr)
    raise SystemExit(2)


def score(report: dict, ceiling_gbps: float) -> tuple[list[dict], int]:
    """The memory-bound cases behind their best baseline, and how many cases were scored."""
    behind, scored = [], 0
    for case in report["cases"]:
        variants = {v["name"]: v for v in case["variants"] if v.get("median_ms")}
        baselines = [variants[name] for name in BASELINES if name in variants]
        if case["op"] == "matmul" or "triton" not in variants or not baselines:
            continue
        scored += 1
        triton, best = variants["triton"], min(baselines, key=lambda v: v["median_ms"])
        ratio = best["median_ms"] / triton["median_ms"]
        if ratio >= 1.0:
            continue
        gbps = case["logical_bytes"] / (triton["median_ms"] * 1e-3) / 1e9
        behind.append({
            "case": f"{case['op']} {'x'.join(map(str, case['shape']))} {case['dtype']}",
            "ratio": ratio, "baseline": best["name"],
            "overlap": triton["min_ms"] <= best["max_ms"],
            "of_ceiling": gbps / ceiling_gbps,
            "triton_us": triton["median_ms"] * 1e3, "best_us": best["median_ms"] * 1e3,
        })  # fmt: skip
    return behind, scored


def render(paths: list[str], ceiling_gbps: float) -> str:
    lines = []
    for path in paths:
        try:
            report = json.loads((ROOT / path).read_text())
            behind, scored = score(report, ceiling_gbps)
        except (OSError, ValueError, KeyError, TypeError) as error:
            fail(f"{path}: not a readable kernel-bench report ({type(error).__name__})")
        overlap = sum(row["overlap"] for row in behind)
        lines.append(f"{path}: {scored} cases; {scored - len(behind)} met; {len(behind)} behind, "
                     f"{overlap} of them with overlapping samples")  # fmt: skip
        lines.append(f"  {'case':34s} {'ratio':>6s} {'vs':8s} {'triton us':>10s} "
                     f"{'best us':>9s} {'ranges':>8s} {'of ceiling':>10s}")  # fmt: skip
        for row in sorted(behind, key=lambda row: row["ratio"]):
            lines.append(
                f"  {row['case']:34s} {row['ratio']:6.3f} {row['baseline']:8s} "
                f"{row['triton_us']:10.2f} {row['best_us']:9.2f} "
                f"{'overlap' if row['overlap'] else 'apart':>8s} {row['of_ceiling']:10.0%}"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = OneLineParser(prog="score_targets", description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="*", default=list(DEFAULT_REPORTS),
                        help="kernel-bench reports, relative to the repository root")  # fmt: skip
    parser.add_argument("--ceiling-gbps", type=float, default=CEILING_GBPS)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", metavar="FILE", help="write the scores to FILE")
    mode.add_argument("--check", metavar="FILE", help="exit 1 if FILE differs from the scores")
    args = parser.parse_args(argv)
    text = render(args.reports, args.ceiling_gbps)
    if args.write:
        target = ROOT / args.write
        if not target.parent.is_dir():
            fail(f"{target.parent} is not a folder")
        partial = target.with_suffix(target.suffix + ".partial")
        partial.write_text(text)
        partial.replace(target)  # whole or not at all
        print(f"score_targets: wrote {args.write}")
    elif args.check:
        try:
            recorded = (ROOT / args.check).read_text()
        except OSError as error:
            fail(f"{args.check}: {error.strerror}")
        if recorded != text:
            print(f"score_targets: {args.check} is stale: run scripts/score_targets.py --write "
                  f"{args.check}")  # fmt: skip
            return 1
        print(f"score_targets: {args.check} is up to date")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
