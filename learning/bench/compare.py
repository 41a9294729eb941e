"""``kernel-bench compare``: two reports case by case, each verdict backed by an interval.

::

    kernel-bench compare BASE.json NEW.json [--margin PCT] [--json PATH [--force]]
    kernel-bench compare --within REPORT.json

**Two runs.** Cases are matched by (op, shape, dtype) and variants by name. For each matched
pair the figure is NEW's median over BASE's (above 1: NEW is slower), with a 95% bootstrap
interval: each report's samples are resampled on their own, *whole visits at a time*, many
times, and the ratio of the two resampled medians is taken each time. A run visits each case
several times (``--visits``) at moments spread over the run, and in each visit times its
rounds one after another; the rounds of one visit share that moment's clocks, so they are not
independent draws. On the H200 a 16384 x 1024 x 1024 GEMM's three rounds of one visit agree
within 1% while its five visits spread over 25% (``results/h200/gemm-fp16-seed1.json``):
fifteen samples there are five observations of the drift, not fifteen. Resampling samples one
by one took them for fifteen, gave an interval as if the drift had been measured fifteen
times, and read that GEMM ``slower`` by 6% against a run of the same code
(``gemm-fp16-seed2.json``). Resampling visits keeps each visit's rounds together, so the drift
between visits, which is also what moves one run against another, widens the interval. The
bootstrap is *unpaired* because two runs share no rounds: the i-th sample of BASE and the
i-th of NEW were taken minutes or days apart, under clocks of their own, so pairing them by
index would claim a correlation that does not exist. Within one report it is the other way
round (below). A run of one visit shows nothing of the drift between visits: its pairs are
not compared.

**The verdict** holds the interval against a practical margin (2% unless ``--margin``), the
same either way round (from 1/1.02 to 1.02, so that BASE against NEW is the mirror of NEW
against BASE): ``same`` when the whole interval lies inside it, ``slower`` or ``faster`` when
the whole interval lies beyond it on one side, ``ambiguous`` otherwise. A test of
significance alone would answer another question: with enough samples any difference is
"significant", a 0.2% one included, and with few samples none is, so "not significant" would
read as "the same" exactly where the run could not tell. The margin asks how large a
difference matters; the interval, whether the run resolved it; ``ambiguous`` says that it did
not: more samples, or an A/A test, are the next step, not a conclusion.

**What the interval leaves out, measured.** Whatever moves a whole run and shows in none of
its visits (the clock state a GPU settles in for the run, a driver, another day) is in no
interval drawn from one run. The recorded A/A pairs say how much that is: the reports of one
sweep under different seeds and identical code and settings (``gemm-seed0..3``,
``gemm-fp16-seed1..3``, ``gemm-train-seed0..3`` on the H200: 15 pairs, 84 matched variants).
Their medians differ by less than the intervals drawn from whole visits allow (the mean
squared log ratio of the medians is 0.00195; the intervals allow 0.00236, their half-width
over 1.96 squared, where intervals drawn from single samples allowed 0.00075 and read two
of the pairs ``slower`` and one ``faster``): no separate run-to-run term is left to add, and
no pair reads ``slower`` or ``faster`` either way round
(``tests/learning/bench/test_compare_aa.py`` holds both). A confirmed difference between two
runs is still a difference between the runs; that it comes from the code is for an A/A pair
of runs to show, where the A/A pairs of that kind of case are few.

**One run** (``--within``): each variant against its case's eager variant, paired round by
round: the median over rounds of eager's sample over the variant's (``paired_ratio``, the
direction of ``paired_vs_eager``: above 1 the variant is faster), with the interval the
report's own verdicts use (``learning.report.stats.paired_verdict``: Student's t over the
run's visits, each visit's rounds summarised by their median log-ratio), and the rounds that
ran throttled left out as the report's verdicts leave them out (``learning.report.telemetry``).
With the default margin it gives the verdicts the report records.

Settings that change what a sample is must agree, or the comparison is refused unless
``--allow-mismatch``: the device and GPU, the timing mode, the cache mode and its flush, the
warm-up bursts, the calls averaged in one sample (``--iterations``), and, where both runs
compiled a baseline, torch.compile's mode (``compile`` under max-autotune is another variant
than under the default mode, with the same name). What may differ is named in a notice, on
the table's last lines and in ``--json``'s ``noted_differences``: the samples and visits each
figure rests on (the interval accounts for them) and the versions of torch, Triton, CUDA, the
driver and Python (a change of version is a change of the code that ran, as the files listed
as differing are; what a comparison may be about, but not silently). Variants that failed,
were skipped, or have too few samples or visits are listed as such and never compared.

Every resampling draws from a generator seeded by ``--seed`` and the pair's own name, so the
output is the same on every run, and one pair's interval does not depend on which other cases
the reports hold.

Exit status: 0 when nothing is confirmed slower, 1 when some pair is ``slower`` (``--within``
describes one run and always exits 0), 2 on bad input (one line on stderr, nothing written).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

import numpy as np

from learning import report as report_format
from learning.bench.config import BenchInputError, check_margin
from learning.report.stats import (
    CONFIDENCE,
    MARGIN,
    MIN_ROUNDS,
    RESAMPLES,
    VERDICTS,
    generator,
    paired_verdict,
    quantiles,
    resampled_medians,
    verdict,
)
from learning.report.telemetry import excluded_rounds
from learning.report.validate import UnreadableReport, read_report
from learning.report.verdicts import case_label, rounds_per_visit

MIN_SAMPLES = MIN_ROUNDS  # fewer, and the resampled medians can only repeat a sample or two
MIN_VISITS = 2  # one visit shows nothing of the drift between visits, which moves a run
# What must agree for two runs' times to compare (_setting reads each, with its old default):
# what one sample is. compile_mode only where both runs compiled (None: no compile variant).
COMPARED_SETTINGS = ("device", "gpu_name", "timing", "cache", "flush", "clock_burst",
                     "iterations", "compile_mode")  # fmt: skip
# What may differ and is named: how much each figure rests on, and the software that ran.
NOTED_SETTINGS = ("samples", "visits")
NOTED_VERSIONS = ("torch", "triton", "cuda", "driver", "python")
COMPARISON_VERSION = 2  # 2: intervals resample whole visits


class CompareInputError(Exception):
    """Bad input for a comparison: the message is the one line the command prints."""


# --------------------------------------------------------------------------- statistics
# verdict, generator, the quantiles and the resampled medians are learning.report.stats's, which
# the engine uses for the verdicts it writes into every report and the validator to re-derive
# them; the unpaired interval between two runs is this command's own.


def resampled_visit_medians(samples, per_visit: int, resamples: int, rng):
    """Medians of ``resamples`` resamplings of ``samples`` by whole visits: the samples in
    round order, cut into visits of ``per_visit`` rounds (a run's last visit may be cut short),
    as many visits as there are drawn with replacement, the median of their rounds taken."""
    samples = np.asarray(samples, dtype=float)
    if per_visit <= 1:
        return resampled_medians(samples, resamples, rng)
    count = -(-len(samples) // per_visit)
    visits = np.full((count, per_visit), np.nan)
    visits.flat[: len(samples)] = samples
    picks = visits[rng.integers(0, count, size=(resamples, count))].reshape(resamples, -1)
    if len(samples) % per_visit == 0:
        return np.median(picks, axis=1)
    return np.nanmedian(picks, axis=1)  # the short visit's missing rounds are no samples


def ratio_interval(
    base, new, *, rng, per_visit=(1, 1), resamples=RESAMPLES, confidence=CONFIDENCE
) -> dict:
    """NEW's median over BASE's, and its percentile bootstrap interval (unpaired), each run
    resampled by whole visits of ``per_visit`` rounds (BASE's, NEW's; 1: sample by sample)."""
    base, new = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    ratio = float(np.median(new) / np.median(base))
    ratios = resampled_visit_medians(new, per_visit[1], resamples, rng) / (
        resampled_visit_medians(base, per_visit[0], resamples, rng)
    )
    return {"ratio": ratio, "interval": list(quantiles(ratios, confidence))}


def _unusable(samples: list, per_visit: int, name: str) -> str | None:
    if len(samples) < MIN_SAMPLES:
        return f"too few samples in {name} ({len(samples)}; a bootstrap needs {MIN_SAMPLES})"
    if -(-len(samples) // per_visit) < MIN_VISITS:
        return (f"one visit in {name}: the drift between visits, which moves a run, needs "
                f"{MIN_VISITS} or more to show")  # fmt: skip
    if min(samples) <= 0:
        return f"a sample in {name} is not positive (a cold-cache subtraction): no ratio"
    return None


# --------------------------------------------------------------------------- reports


def load_report(path: Path, role: str) -> dict:
    """The schema-v2 report at ``path``, or :class:`CompareInputError` saying why not."""
    try:  # the validator's reader: its size and nesting limits, strict JSON, finite numbers
        data = read_report(Path(path))
    except UnreadableReport as error:
        raise CompareInputError(f"{role} {path}: {error}") from None
    if report_format.is_record(data):
        raise CompareInputError(f"{role} {path}: a script record, not a kernel-bench report")
    problems = report_format.schema_problems(data)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise CompareInputError(
            f"{role} {path}: not a schema-v2 kernel-bench report: {problems[0]}{more}"
        )
    return data


def _setting(report: dict, name: str):
    settings = report["settings"]
    if name == "gpu_name":
        return report["environment"]["gpu_name"]
    if name == "flush":  # only cold runs flush; reports from before the setting zeroed (write)
        return settings.get("flush", "write") if settings["cache"] == "cold" else None
    if name == "clock_burst":  # reports from before the setting ran bursts
        return settings.get("clock_burst", "on")
    if name == "compile_mode":  # reports from before the setting compiled in the default mode
        return settings.get("compile_mode", "default") if settings.get("compile") else None
    return settings.get(name)


def mismatched_settings(base: dict, new: dict) -> list[str]:
    """``"timing: graph in BASE, events in NEW"`` for each setting that differs (the compile
    mode only where both runs compiled a baseline)."""
    differing = []
    for name in COMPARED_SETTINGS:
        ours, theirs = _setting(base, name), _setting(new, name)
        if name == "compile_mode" and None in (ours, theirs):
            continue
        if ours != theirs:
            differing.append(f"{name}: {ours} in BASE, {theirs} in NEW")
    return differing


def noted_differences(base: dict, new: dict) -> list[str]:
    """What may differ between two compared runs, named where it does: the samples and
    visits, and each version both runs recorded (torch, Triton, CUDA, the driver, Python)."""
    pairs = [(name, _setting(base, name), _setting(new, name)) for name in NOTED_SETTINGS]
    pairs += [(name, base["environment"].get(name), new["environment"].get(name))
              for name in NOTED_VERSIONS]  # fmt: skip
    return [
        f"{name}: {ours} in BASE, {theirs} in NEW"
        for name, ours, theirs in pairs
        if ours is not None and theirs is not None and ours != theirs
    ]


def changed_files(base: dict, new: dict) -> list[str]:
    """The files both runs fingerprinted whose code differs (normalised hashes where both
    reports have them: a comment or docstring edit is no change)."""
    changed = []
    for key in ("normalized", "files"):
        ours, theirs = base["fingerprint"].get(key), new["fingerprint"].get(key)
        if ours and theirs:
            changed = sorted(f for f in ours.keys() & theirs.keys() if ours[f] != theirs[f])
            break
    return changed


def _key(case: dict) -> tuple:
    return case["op"], tuple(case["shape"]), case["dtype"]


def _cases(report: dict, role: str) -> dict:
    cases = {}
    for case in report["cases"]:
        if _key(case) in cases:
            raise CompareInputError(f"{role}: case {case_label(case)} appears twice")
        cases[_key(case)] = case
    return cases


def _not_timed(variant: dict, role: str) -> str | None:
    if variant["status"] == "timed":
        return None
    reason = variant.get("reason") or variant["correctness"].get("reason") or "no reason given"
    return f"{variant['status']} in {role}: {reason}"


# --------------------------------------------------------------------------- the comparisons


def compare_reports(
    base: dict,
    new: dict,
    margin: float = MARGIN,
    *,
    seed: int = 0,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
) -> dict:
    """Every matched (case, variant) of two reports: ratio, interval, verdict, or why none.

    Raises :class:`CompareInputError` when the reports have no case in common.
    """
    base_cases, new_cases = _cases(base, "BASE"), _cases(new, "NEW")
    per_visit = rounds_per_visit(base["settings"]), rounds_per_visit(new["settings"])
    common = [key for key in base_cases if key in new_cases]
    if not common:
        raise CompareInputError("the two reports have no case (op, shape, dtype) in common")
    rows, only_base, only_new = [], [], []
    for key in common:
        case, theirs = base_cases[key], new_cases[key]
        label = case_label(case)
        new_variants = {v["name"]: v for v in theirs["variants"]}
        base_names = {v["name"] for v in case["variants"]}
        only_new += [f"{label} {n}" for n in new_variants if n not in base_names]
        for ours in case["variants"]:
            other = new_variants.get(ours["name"])
            if other is None:
                only_base.append(f"{label} {ours['name']}")
                continue
            row = {"case": label, "op": key[0], "shape": list(key[1]), "dtype": key[2],
                   "variant": ours["name"], "kind": ours["kind"]}  # fmt: skip
            why = _not_timed(ours, "BASE") or _not_timed(other, "NEW")
            why = why or _unusable(ours["samples_ms"], per_visit[0], "BASE")
            why = why or _unusable(other["samples_ms"], per_visit[1], "NEW")
            if why:
                rows.append({**row, "verdict": None, "not_compared": why})
                continue
            rng = generator(seed, *key[:1], list(key[1]), key[2], ours["name"])
            figures = ratio_interval(
                ours["samples_ms"], other["samples_ms"], rng=rng, per_visit=per_visit,
                resamples=resamples, confidence=confidence,
            )  # fmt: skip
            rows.append(
                {
                    **row,
                    "base_median_ms": float(np.median(ours["samples_ms"])),
                    "new_median_ms": float(np.median(other["samples_ms"])),
                    "base_samples": len(ours["samples_ms"]),
                    "new_samples": len(other["samples_ms"]),
                    "base_rounds_per_visit": per_visit[0],
                    "new_rounds_per_visit": per_visit[1],
                    **figures,
                    "verdict": verdict(figures["interval"], margin),
                }
            )
    only_base += [case_label(c) for k, c in base_cases.items() if k not in new_cases]
    only_new += [case_label(c) for k, c in new_cases.items() if k not in base_cases]
    return {
        "comparison": "two reports",
        "comparison_version": COMPARISON_VERSION,
        "margin": margin,
        "confidence": confidence,
        "resamples": resamples,
        "seed": seed,
        "mismatched_settings": mismatched_settings(base, new),
        "noted_differences": noted_differences(base, new),
        "changed_files": changed_files(base, new),
        "pairs": rows,
        "only_in_base": only_base,
        "only_in_new": only_new,
        "summary": _summary(rows),
    }


def within_report(
    report: dict,
    margin: float = MARGIN,
    *,
    seed: int = 0,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
) -> dict:
    """Every variant of every case against the case's eager variant (:func:`paired_verdict`)."""
    rows = []
    keep = report.get("settings", {}).get("keep_throttled", False)
    per_visit = rounds_per_visit(report.get("settings", {}))
    for case in report["cases"]:
        variants = {v["name"]: v for v in case["variants"]}
        eager = variants.get(case["eager_variant"])
        excluded, _ = excluded_rounds(case, keep)  # the rounds the report's verdicts left out
        for variant in case["variants"]:
            if variant is eager:
                continue
            row = {"case": case_label(case), "op": case["op"], "shape": case["shape"],
                   "dtype": case["dtype"], "variant": variant["name"], "kind": variant["kind"],
                   "eager_variant": case["eager_variant"]}  # fmt: skip
            why = "the case has no eager variant" if eager is None else None
            why = why or _not_timed(variant, "this report") or _not_timed(eager, "eager")
            result = None if why else paired_verdict(
                variant, eager, margin, rounds_per_visit=per_visit, excluded=excluded,
                confidence=confidence,
            )  # fmt: skip
            if not why and (result is None or result["paired_ratio_ci"] is None):
                why = (f"no interval: fewer than {MIN_SAMPLES} rounds, unequal sample counts, "
                       "or a sample that is not positive")  # fmt: skip
            if why:
                rows.append({**row, "verdict": None, "not_compared": why})
                continue
            rows.append(
                {
                    **row,
                    "eager_median_ms": float(np.median(eager["samples_ms"])),
                    "median_ms": float(np.median(variant["samples_ms"])),
                    **result,
                }
            )
    return {
        "comparison": "within one report",
        "comparison_version": COMPARISON_VERSION,
        "margin": margin,
        "confidence": confidence,
        "resamples": resamples,
        "seed": seed,
        "pairs": rows,
        "summary": _summary(rows),
    }


def _summary(rows: list[dict]) -> dict:
    counts = {name: sum(row["verdict"] == name for row in rows) for name in VERDICTS}
    return {**counts, "not_compared": sum(row["verdict"] is None for row in rows)}


# --------------------------------------------------------------------------- what is printed


def _us(ms: float) -> str:
    return f"{ms * 1e3:.2f}"


def _aligned(rows: list[tuple]) -> list[str]:
    """Columns padded to their widest cell: the first two left-aligned, the rest right, the
    last (a verdict or a reason) left as it is."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            cell if i == len(row) - 1 else cell.ljust(w) if i < 2 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]


def _table(comparison: dict, within: bool) -> list[str]:
    if within:
        table = [("case", "variant", "eager us", "variant us", "paired", "95% interval",
                  "verdict")]  # fmt: skip
    else:
        table = [("case", "variant", "base us", "new us", "new/base", "95% interval",
                  "verdict")]  # fmt: skip
    previous = None
    for row in comparison["pairs"]:
        label = "" if row["case"] == previous else row["case"]
        previous = row["case"]
        if row["verdict"] is None:
            table.append((label, row["variant"], "-", "-", "-", "-", row["not_compared"]))
            continue
        if within:
            figures = (row["eager_median_ms"], row["median_ms"], row["paired_ratio"],
                       row["paired_ratio_ci"])  # fmt: skip
        else:
            figures = (row["base_median_ms"], row["new_median_ms"], row["ratio"],
                       row["interval"])  # fmt: skip
        first, second, ratio, (low, high) = figures
        table.append((label, row["variant"], _us(first), _us(second), f"{ratio:.3f}",
                      f"{low:.3f}-{high:.3f}", row["verdict"]))  # fmt: skip
    return _aligned(table)


def format_comparison(comparison: dict) -> str:
    """The table, the cases and variants only one report has, and a summary line."""
    within = comparison["comparison"] == "within one report"
    lines = _table(comparison, within)
    for role in ("base", "new"):
        for name in comparison.get(f"only_in_{role}", []):
            lines.append(f"only in {role.upper()}: {name}")
    changed = comparison.get("changed_files")
    if changed:
        shown = ", ".join(changed[:4]) + (f" and {len(changed) - 4} more" if len(changed) > 4
                                          else "")  # fmt: skip
        lines.append(f"code that differs between the runs: {shown}")
    for noted in comparison.get("noted_differences", []):
        lines.append(f"differs between the runs: {noted}")
    summary = comparison["summary"]
    counted = ", ".join(f"{summary[name]} {name}" for name in VERDICTS)
    margin = comparison["margin"] * 100
    what = ("each variant against eager, paired by round (paired: eager's sample over the "
            "variant's, above 1 faster)" if within else "NEW against BASE")  # fmt: skip
    how = ("Student's t intervals over the run's visits" if within else
           f"bootstrap intervals of {comparison['resamples']} resamples of whole visits, "
           f"seed {comparison['seed']}")  # fmt: skip
    lines.append(
        f"{what}: {counted}; {summary['not_compared']} not compared. Margin {margin:g}%, "
        f"{comparison['confidence']:.0%} {how}."
    )
    return "\n".join(lines)


def write_comparison(comparison: dict, path: Path, force: bool) -> None:
    """Write the comparison whole (a temporary file, then a link or a rename): never half a
    file, and an existing file only with ``force``."""
    from learning.bench.engine import write_new  # the package loaded it already

    try:
        if force:
            report_format.write_atomic(comparison, path)
        elif not write_new(comparison, path):
            raise CompareInputError(f"--json {path} already exists; pass --force to replace it")
    except OSError as error:
        raise CompareInputError(f"--json {path}: cannot be written ({error.strerror})") from None


# --------------------------------------------------------------------------- command line


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="kernel-bench compare",
        description="Compare two kernel-bench reports case by case (NEW against BASE), or, "
        "with --within, each variant of one report against its eager variant; each verdict "
        "(faster, slower, same, ambiguous) comes from a 95% bootstrap interval held against a "
        "margin. Two runs are resampled by whole visits, so the drift between a run's visits "
        "widens the interval; a run of one visit is not compared.",
    )
    p.add_argument("reports", nargs="*", type=Path, metavar="BASE.json NEW.json")
    p.add_argument("--within", type=Path, metavar="REPORT.json",
                   help="one report: each variant against its case's eager variant, paired by "
                   "round")  # fmt: skip
    p.add_argument("--margin", type=float, default=MARGIN * 100, metavar="PCT",
                   help="the difference that matters, in per cent, above 0 and below 100 "
                   "(default 2)")  # fmt: skip
    p.add_argument("--json", type=Path, metavar="PATH", help="also write the comparison here")
    p.add_argument("--force", action="store_true", help="replace an existing --json file")
    p.add_argument("--allow-mismatch", action="store_true",
                   help="compare reports measured differently: device, GPU, timing, cache, "
                   "flush, warm-up bursts, calls per sample (--iterations) or, where both "
                   "compiled, torch.compile's mode (refused without it). Samples, visits and "
                   "the torch, Triton, CUDA, driver and Python versions may differ: they are "
                   "named below the table")  # fmt: skip
    p.add_argument("--seed", type=int, default=0, help="the bootstrap's seed (default 0)")
    return p


def _check_arguments(args) -> None:
    if args.within is not None and args.reports:
        raise CompareInputError("--within takes one report; give no BASE and NEW with it")
    if args.within is None and len(args.reports) != 2:
        raise CompareInputError(
            f"give two reports, BASE.json NEW.json (got {len(args.reports)}), or --within REPORT"
        )
    try:
        check_margin(args.margin)  # kernel-bench's rule and words
    except BenchInputError as error:
        raise CompareInputError(str(error)) from None
    if args.json is not None:
        if args.json.exists() and not args.json.is_file():
            raise CompareInputError(f"--json {args.json} exists and is not a regular file")
        if args.json.exists() and not args.force:
            raise CompareInputError(
                f"--json {args.json} already exists; pass --force to replace it"
            )
        if not args.json.parent.is_dir():
            raise CompareInputError(f"--json {args.json}: no folder {args.json.parent}")


def main(argv: list[str] | None = None) -> int:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)  # imports done: as usual
    try:
        args = parser().parse_args(argv)
    except SystemExit as exit_:  # --help (0) or a malformed line (2, one line)
        return exit_.code
    try:
        _check_arguments(args)
        options = {"margin": args.margin / 100, "seed": args.seed}
        if args.within is not None:
            comparison = {
                "report": str(args.within),
                **within_report(load_report(args.within, "REPORT"), **options),
            }
        else:
            base, new = (load_report(args.reports[0], "BASE"), load_report(args.reports[1], "NEW"))
            differing = mismatched_settings(base, new)
            if differing and not args.allow_mismatch:
                raise CompareInputError(
                    f"the runs were measured differently ({'; '.join(differing)}), so their "
                    "times do not compare; pass --allow-mismatch to compare them anyway"
                )
            comparison = {"base": str(args.reports[0]), "new": str(args.reports[1]),
                          **compare_reports(base, new, **options)}  # fmt: skip
        if args.json is not None:
            write_comparison(comparison, args.json, args.force)
    except CompareInputError as error:
        print(f"kernel-bench compare: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # the comparison is written whole or not at all
        print("kernel-bench compare: interrupted; nothing written", file=sys.stderr)
        return 130
    if comparison.get("mismatched_settings"):
        print("kernel-bench compare: warning: measured differently: "
              + "; ".join(comparison["mismatched_settings"]), file=sys.stderr)  # fmt: skip
    print(format_comparison(comparison))
    if args.json is not None:
        print(f"kernel-bench compare: wrote {args.json}", file=sys.stderr)
    return 1 if args.within is None and comparison["summary"]["slower"] else 0


if __name__ == "__main__":
    sys.exit(main())
