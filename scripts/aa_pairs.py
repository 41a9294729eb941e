"""kernel-bench's A/A test, read: the reference timed twice in one report, as ``triton`` and as
``learner`` (a copy of the reference standing in for the exercises), case by case. (CPU)

    python3 scripts/aa_pairs.py REPORT.json [REPORT.json ...]

The two variants run the same code on the same inputs in the same shuffled visits, so any
difference between them is the method's own: what a claim of "A is x% faster than B" at that
case has to beat. Per case: both medians, their quotient, and the pair round by round
(``learning.report.stats.paired``: the median over rounds of triton's sample over learner's,
the rounds learner was slower, and a sign test's p); ``steady`` marks p < 0.01, the threshold
``scripts/score_targets.py`` uses to call a loss steady. A closing line counts the pairs and the
steady ones, and gives the largest difference by medians and paired.

``scripts/h200_evidence.sh cold-aa`` runs kernel-bench that way and prints this after each run.
A report without a ``learner`` variant, or not a kernel-bench report, stops it with one line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _records import REPO_ROOT, OneLineParser  # noqa: E402

sys.path.insert(0, str(REPO_ROOT))  # learning, wherever the script is run from

STEADY_P = 0.01


def case_label(case: dict) -> str:
    return f"{case['op']} {'x'.join(map(str, case['shape']))} {case['dtype']}"


def pairs(report: dict, where: str) -> list[dict]:
    """One row per case that timed both ``triton`` and ``learner``."""
    from learning.report.stats import paired

    if not isinstance(report, dict) or not isinstance(report.get("cases"), list):
        raise ValueError(f"{where}: not a kernel-bench report (no list of cases)")
    rows = []
    for case in report["cases"]:
        variants = {v.get("name"): v for v in case.get("variants", [])}
        ours, theirs = variants.get("triton"), variants.get("learner")
        if not ours or not theirs or ours.get("median_ms") is None or not theirs.get("median_ms"):
            continue
        pair = paired(theirs, ours)
        rows.append({"case": case_label(case), "triton_us": ours["median_ms"] * 1e3,
                     "learner_us": theirs["median_ms"] * 1e3,
                     "median_ratio": ours["median_ms"] / theirs["median_ms"],
                     "paired": pair,
                     "steady": bool(pair and pair["p"] < STEADY_P)})  # fmt: skip
    if not rows:
        raise ValueError(f"{where}: no case timed both triton and learner (run --impl learner)")
    return rows


def table(rows: list[dict]) -> list[str]:
    lines = [f"  {'case':30} {'triton us':>9} {'learner us':>10} {'ratio':>6} {'paired':>7} "
             f"{'slower':>7} {'p':>7}"]  # fmt: skip
    for row in rows:
        pair = row["paired"]
        paired_text = f"{pair['paired_ratio']:.3f}" if pair else "-"
        slower = f"{pair['slower']}/{pair['rounds']}" if pair else "-"
        p = f"{pair['p']:.4f}" if pair else "-"
        lines.append(f"  {row['case']:30} {row['triton_us']:9.2f} {row['learner_us']:10.2f} "
                     f"{row['median_ratio']:6.3f} {paired_text:>7} {slower:>7} {p:>7}"
                     + ("  steady" if row["steady"] else ""))  # fmt: skip
    return lines


def summary(rows: list[dict]) -> str:
    steady = sum(row["steady"] for row in rows)
    by_median = max(abs(row["median_ratio"] - 1) for row in rows)
    by_pair = max((abs(row["paired"]["paired_ratio"] - 1) for row in rows if row["paired"]),
                  default=0.0)  # fmt: skip
    return (f"{len(rows)} A/A pairs, {steady} steady (p < {STEADY_P}); the largest difference "
            f"{by_median:.1%} by medians, {by_pair:.1%} paired")


def main(argv=None) -> int:
    parser = OneLineParser(prog="aa_pairs", description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="+", help="kernel-bench reports run with --impl learner")
    args = parser.parse_args(argv)
    rows = []
    for name in args.reports:
        try:
            report = json.loads(Path(name).read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            print(f"aa_pairs: {name}: cannot read: {error}", file=sys.stderr)
            return 2
        try:
            rows += pairs(report, name)
        except ValueError as error:
            print(f"aa_pairs: {error}", file=sys.stderr)
            return 2
    print("triton and learner are one kernel; ratio: triton's median over learner's; paired: "
          "the median over rounds of the same quotient; slower: rounds learner lost")
    print("\n".join(table(rows)))
    print(summary(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
