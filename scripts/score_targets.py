"""Score the recorded reports against the course's targets: every target, and where it is missed.

    python scripts/score_targets.py --results results/h100            # print the scoreboard
    python scripts/score_targets.py --results results/h100 --check results/h100/target-scores.log
    python scripts/score_targets.py --results results/h100 --write results/h100/target-scores.log

No GPU needed: it reads the sweeps one card's folder holds (``results/<card>/``; a sweep is its
base report and the parts that re-recorded some of its cases, ``learning.report.sweeps``) and
judges them against the targets in ``scripts/_targets.py``, the one place they are written.
One line per target: what was measured, met or missed, and the file it comes from:

* bandwidth at 16384 x 4096 fp16, warm (``all``) and cold (``all-cold``), as a share of the
  streaming ceiling measured in the same report (the fastest variant of the ceiling's case):
  no figure of one card is held against another;
* every memory-bound case of the default sweep against the faster of eager and compile;
* the GEMMs against the better of ``torch.mm`` and torch.compile (``gemm-bf16.json``, whose
  compile is Inductor's max-autotune; ``all.json`` in fp16, whose compile calls cuBLAS; and the
  interleaved comparison with max-autotune, ``external-baselines-gemm.json``);
* the training steps (``training.json``) and Liger-Kernel (``external-baselines-rows.json``);
* the softmax wrapper's host time (``wrapper-overhead.json``).

Then, for the every-case target, the cases behind, described by facts the report holds:

* ``ranges``: whether the two variants' samples overlap (the reference's fastest sample is
  no slower than the baseline's slowest). If they do, the sweep's own spread is as large as
  the difference: the order of the two medians can change from one sweep to the next.
* ``paired`` and ``rounds slower`` (``learning.report.stats``, which also gives kernel-bench
  reports their ``paired_vs_eager``): kernel-bench times every variant of a case once a round,
  back to back in a shuffled order, and appends the samples in round order, so the i-th
  samples of two variants come from the same round, under the same clocks. ``paired`` is
  the median over rounds of the baseline's time over the reference's (the ratio without the
  drift between rounds); ``rounds slower`` counts the rounds in which the reference was the
  slower of the two, with a two-sided sign test's p (how often a coin would be as lopsided).
  Samples that overlap can still come from a reference slower in every round: a small
  difference, but a real one. (Rounds of one visit share its moment, so they are not quite
  independent coins and the p is a guide: in ``results/h200/streaming-variants.log`` two
  timings of identical code read p = 0.38 and p = 0.0015 against the same baseline, 0.2%
  apart. Below about 0.3% a small p is not proof.) A report whose
  variants hold different numbers of samples (one failed partway) has no pairs: ``-``.
* ``of ceiling``: the reference's logical bandwidth as a share of the streaming ceiling
  measured in the same report: near 100 % no kernel can be much faster.

A record the card's folder does not hold (the interleaved GEMM comparison, Liger-Kernel, the
wrapper's host time are recorded by companion scripts, not by every card's sweeps) gets a line
saying so, with no verdict.

A bandwidth target is judged on the median. A speedup target (GEMM, training step) is met
when the 95% interval of the paired ratio the report records lies at or above the goal; where
the ratio of medians reaches the goal but the interval does not (or none is recorded), the
line says ``met within noise``, and the header counts those apart. The interval is shown
beside the paired ratio.

Each every-case target has a second line judged by the verdicts the reports record
(``learning.report.stats.paired_verdict``): the reference against the faster baseline, paired
by round, with a 95% interval over the run's visits held against the report's margin (±2%),
and rounds that ran throttled left out. It is met when no case is ``slower``; ``same`` and
``faster`` cases count as meeting it, and ``ambiguous`` ones are counted apart: the sweep could
not tell.
The GEMM and training lines show the verdict beside the ratio.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: the engine's package sits beside scripts/
    sys.path.insert(0, str(ROOT))

import _targets as targets  # noqa: E402
from _records import OneLineParser  # noqa: E402

from learning.report import sweeps  # noqa: E402
from learning.report.stats import paired  # noqa: E402  (_paired_rows.py pairs the same way)

RESULTS = "results/h200"
BASELINES = ("torch", "compile")
SIGNIFICANT = 0.01  # a sign test's p below this: the reference was slower round after round


def fail(message: str):
    """One line on stderr, exit 2: how every maintainer script answers bad input."""
    print(f"score_targets: {message}", file=sys.stderr)
    raise SystemExit(2)


def measured_ceiling(report: dict) -> float | None:
    """The streaming ceiling a report measured: the fastest timed variant of the ceiling's
    case, in logical GB/s (None if the report does not hold that case)."""
    op, shape, dtype = sweeps.CEILING_CASE
    for case in report.get("cases", ()):
        if case["op"] == op and tuple(case["shape"]) == shape and case["dtype"] == dtype:
            rates = [v["logical_gbps"] for v in case["variants"] if v.get("logical_gbps")]
            return max(rates) if rates else None
    return None


def score(report: dict, ceiling_gbps: float | None) -> tuple[list[dict], int]:
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
        if ratio >= targets.EVERY_CASE_SPEEDUP:
            continue
        gbps = case["logical_bytes"] / (triton["median_ms"] * 1e-3) / 1e9
        behind.append({
            "case": f"{case['op']} {'x'.join(map(str, case['shape']))} {case['dtype']}",
            "ratio": ratio, "baseline": best["name"],
            "overlap": triton["min_ms"] <= best["max_ms"],
            "of_ceiling": gbps / ceiling_gbps if ceiling_gbps else None,
            "triton_us": triton["median_ms"] * 1e3, "best_us": best["median_ms"] * 1e3,
            "paired": paired(triton, best),
        })  # fmt: skip
    return behind, scored


def recorded_pair(triton: dict, baseline: dict, eager_variant: str) -> dict | None:
    """The reference against ``baseline`` as its report records it (None in a report made
    before verdicts were recorded): against the case's eager variant in ``paired_vs_eager``,
    against any other in ``paired_vs``."""
    if baseline["name"] == eager_variant:
        return triton.get("paired_vs_eager")
    return (triton.get("paired_vs") or {}).get(baseline["name"])


def recorded_verdict(triton: dict, baseline: dict, eager_variant: str) -> str | None:
    """The verdict of :func:`recorded_pair`, None where none is recorded."""
    versus = recorded_pair(triton, baseline, eager_variant)
    return None if versus is None else versus.get("verdict")


def verdicts(report: dict) -> dict[str, list[str]]:
    """Per verdict, the memory-bound cases whose reference got it against its faster baseline
    (by median); ``unrecorded`` for cases whose report holds no verdict."""
    found: dict[str, list[str]] = {}
    for case in report["cases"]:
        variants = {v["name"]: v for v in case["variants"] if v.get("median_ms")}
        baselines = [variants[name] for name in BASELINES if name in variants]
        if case["op"] == "matmul" or "triton" not in variants or not baselines:
            continue
        best = min(baselines, key=lambda v: v["median_ms"])
        label = f"{case['op']} {'x'.join(map(str, case['shape']))} {case['dtype']}"
        judged = recorded_verdict(variants["triton"], best, case["eager_variant"])
        found.setdefault(judged or "unrecorded", []).append(label)
    return found


def _verdict_line(found: dict[str, list[str]], mode: str, name: str) -> dict:
    target = f"every memory-bound case not slower than the faster baseline (verdict), {mode}"
    if set(found) <= {"unrecorded"}:
        return _line(target, "the report records no verdicts", None, name)
    counts = ", ".join(f"{len(found.get(v, []))} {v}" for v in
                       ("faster", "same", "ambiguous", "slower"))  # fmt: skip
    slower = found.get("slower", [])
    shown = f" ({'; '.join(slower[:3])}{'; ...' if len(slower) > 3 else ''})" if slower else ""
    return _line(target, counts + shown, not slower, name)


def _label(shape) -> str:
    return "x".join(map(str, shape))


def _variants(report: dict, op: str, shape, dtype: str) -> dict:
    """The named variants of one case of a kernel-bench report ({} if the case is absent)."""
    for case in report["cases"]:
        if case["op"] == op and tuple(case["shape"]) == tuple(shape) and case["dtype"] == dtype:
            return {v["name"]: v | {"bytes": case["logical_bytes"],
                                    "eager_variant": case["eager_variant"]}
                    for v in case["variants"] if v.get("median_ms")}  # fmt: skip
    return {}


class View:
    """One sweep of a card, read as kernel-bench reports: the newest recording of each case,
    grouped by the file it came from, with that file's own ceiling."""

    def __init__(self, folder: Path, name: str):
        try:
            self.sweep = sweeps.load_sweep(folder, name)
        except (OSError, ValueError) as error:
            fail(f"{folder}/{name}: a report there is not readable ({type(error).__name__})")
        for path, report in self.sweep.files:
            if not isinstance(report, dict) or not isinstance(report.get("cases"), list):
                fail(f"{path}: not a kernel-bench report (no cases)")
        self.name = f"{name}.json"
        self.present = bool(self.sweep.files)

    def files(self) -> list[tuple[str, dict, float | None]]:
        """(file name, a report of the cases taken from it, its ceiling) per file used."""
        chosen: dict[Path, list[dict]] = {}
        reports: dict[Path, dict] = {}
        for case, path, report in self.sweep.cases().values():
            chosen.setdefault(path, []).append(case)
            reports[path] = report
        return [(path.name, {"cases": cases}, measured_ceiling(reports[path]))
                for path, cases in chosen.items()]  # fmt: skip

    def case(self, op: str, shape, dtype: str) -> tuple[dict, str, float | None]:
        """(the named variants, the file, the file's ceiling); ({}, this sweep, None) if absent."""
        found = self.sweep.case(op, shape, dtype)
        if found is None:
            return {}, self.name, None
        case, path, report = found
        return _variants({"cases": [case]}, op, shape, dtype), path.name, measured_ceiling(report)


def _line(target: str, measured: str, met: bool | None, source: str,
          within_noise: bool = False) -> dict:  # fmt: skip
    verdict = "-" if met is None else ("missed" if not met else
                                       "met within noise" if within_noise else "met")  # fmt: skip
    return {"target": target, "measured": measured, "verdict": verdict, "from": source}


def _speedup_line(target, view, op, shape, dtype, versus, goal) -> dict:
    """``versus``' median over the reference's against ``goal`` (the faster of ``versus``):
    met when the paired ratio's 95% interval clears the goal, "met within noise" when the
    ratio reaches it but the interval (or the lack of one) does not."""
    variants, name, _ = view.case(op, shape, dtype)
    found = [variants[v] for v in versus if v in variants]
    if "triton" not in variants or not found:
        return _line(target, "not recorded on this card", None, name)
    best = min(found, key=lambda v: v["median_ms"])
    ratio = best["median_ms"] / variants["triton"]["median_ms"]
    pairs = paired(variants["triton"], best)
    record = recorded_pair(variants["triton"], best, best["eager_variant"]) or {}
    interval = record.get("paired_ratio_ci")
    verdict = f"; {record['verdict']}" if record.get("verdict") else ""
    spread = f", 95% {interval[0]:.3f}-{interval[1]:.3f}" if interval else ""
    measured = f"{ratio:.3f}x" if pairs is None else (
        f"{ratio:.3f}x (paired {pairs['paired_ratio']:.3f}{spread}, slower in "
        f"{pairs['slower']} of {pairs['rounds']} rounds{verdict})")  # fmt: skip
    cleared = interval is not None and interval[0] >= goal
    return _line(target, measured, ratio >= goal, name, within_noise=not cleared)


def _record(results: Path, name: str) -> dict | None:
    """A companion script's record in the card's folder (its output), None if absent."""
    path = results / name
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        fail(f"{path}: not readable ({type(error).__name__})")
    return data.get("data", data)  # a script record keeps its output under "data"


def _bandwidth_lines(views: dict) -> list[dict]:
    lines = []
    for op, share in targets.BANDWIDTH_SHARE.items():
        for sweep, mode in (("all", "warm"), ("all-cold", "cold")):
            variants, name, ceiling = views[sweep].case(op, targets.BANDWIDTH_SHAPE, "float16")
            target = (f"{op} {_label(targets.BANDWIDTH_SHAPE)} float16 >= {share:.0%} of the "
                      f"streaming ceiling, {mode}")  # fmt: skip
            triton = variants.get("triton")
            if triton is None or not ceiling:
                lines.append(_line(target, "not recorded on this card", None, name))
                continue
            gbps = triton["bytes"] / (triton["median_ms"] * 1e-3) / 1e9
            measured = f"{gbps:.0f} GB/s, {gbps / ceiling:.2%} of {ceiling:.0f}"
            lines.append(_line(target, measured, gbps / ceiling >= share, name))
    return lines


def scoreboard(results: Path) -> tuple[list[dict], list[str]]:
    """Every target's line, and the every-case detail tables."""
    views = {name: View(results, name) for name in ("all", "all-cold", "training", "gemm-bf16",
                                                    "gemm-train", "attention",
                                                    "attention-training")}  # fmt: skip
    if not views["all"].present:
        fail(f"{results}: no all.json, so no sweep to score")
    lines, details = _bandwidth_lines(views), []
    for sweep, mode in (("all", "warm"), ("all-cold", "cold")):
        view = views[sweep]
        if not view.present:
            lines.append(_line(f"every memory-bound case, {mode}", "not recorded on this card",
                               None, view.name))  # fmt: skip
            continue
        behind, scored, found = [], 0, {}
        for name, report, ceiling in view.files():
            rows, count = score(report, ceiling)
            behind += [row | {"file": name} for row in rows]
            scored += count
            for verdict, cases in verdicts(report).items():
                found.setdefault(verdict, []).extend(cases)
        overlap = sum(row["overlap"] for row in behind)
        steady = sum(_significant(row) for row in behind)
        lines.append(_line(f"every memory-bound case >= the faster of eager and compile, {mode}",
                           f"{scored - len(behind)} of {scored}; {len(behind)} behind, "
                           f"{overlap} overlapping, {steady} slower round after round",
                           not behind, view.name))  # fmt: skip
        lines.append(_verdict_line(found, mode, view.name))
        details.append(_detail(f"{view.name}: {mode}", behind))
    for shape, dtype in targets.GEMM_SHAPES:
        for view, dtype_here, versus in (
            (views["gemm-bf16"], "bfloat16", "torch.mm, max-autotune"),
            (views["all"], dtype, "torch.mm, compile"),
        ):
            lines.append(_speedup_line(
                f"matmul {_label(shape)} {dtype_here} >= {targets.GEMM_SPEEDUP:.2f}x {versus}",
                view, "matmul", shape, dtype_here, BASELINES, targets.GEMM_SPEEDUP,
            ))  # fmt: skip
    lines += _external_lines(_record(results, "external-baselines-gemm.json"),
                             "external-baselines-gemm.json", None)  # fmt: skip
    for op, goal in targets.TRAINING_SPEEDUP_VS_COMPILE.items():
        lines.append(_speedup_line(
            f"{op} {_label(targets.TRAINING_SHAPE)} float16 >= {goal:.2f}x compile",
            views["training"], op, targets.TRAINING_SHAPE, "float16", ("compile",), goal,
        ))  # fmt: skip
    goal = targets.MATMUL_TRAIN_SPEEDUP_VS_TORCH
    for sweep in ("training", "gemm-train"):
        for case, _, _ in views[sweep].sweep.cases().values():
            if case["op"] == "matmul_train":
                lines.append(_speedup_line(
                    f"matmul_train {_label(case['shape'])} {case['dtype']} >= {goal:.2f}x torch",
                    views[sweep], "matmul_train", case["shape"], case["dtype"], ("torch",), goal,
                ))  # fmt: skip
    lines += _external_lines(_record(results, "external-baselines-rows.json"),
                             "external-baselines-rows.json", "liger")  # fmt: skip
    lines += _attention_lines(views, details)
    record = _record(results, "wrapper-overhead.json")
    lines.append(_host_line(record) if record is not None else _line(
        f"softmax wrapper's host time at {_label(targets.HOST_COST_SHAPE)} <= "
        f"{targets.HOST_COST_RATIO:.2f}x torch.softmax", "not recorded on this card", None,
        "wrapper-overhead.json"))  # fmt: skip
    return lines, details


def _attention_lines(views: dict, details: list[str]) -> list[dict]:
    """Every attention case against the faster of its targets' baselines, the causal cases'
    speed-up over the full ones, and the moonshot against cuDNN."""
    lines, goal, versus = [], targets.ATTENTION_SPEEDUP, targets.ATTENTION_VERSUS
    names = " and ".join(versus)
    for sweep in ("attention", "attention-training"):
        view = views[sweep]
        target = f"every {sweep} case >= {goal:.2f}x the faster of {names}"
        causal_goal = targets.ATTENTION_CAUSAL_SPEEDUP
        causal_target = f"every causal {sweep} case >= {causal_goal:.2f}x faster than the full one"
        if not view.present:
            for text in (target, causal_target):
                lines.append(_line(text, "not recorded on this card", None, view.name))
            continue
        behind, scored = [], 0
        for case, _, _ in view.sweep.cases().values():
            variants = _variants({"cases": [case]}, case["op"], case["shape"], case["dtype"])
            found = [variants[v] for v in versus if v in variants]
            if "triton" not in variants or not found:
                continue
            scored += 1
            best = min(found, key=lambda v: v["median_ms"])
            ratio = best["median_ms"] / variants["triton"]["median_ms"]
            if ratio < goal:
                label = f"{case['op']} {_label(case['shape'])} {case['dtype']}"
                behind.append(f"{label}: {ratio:.3f}x {best['name']}")
        lines.append(_line(target, f"{scored - len(behind)} of {scored}", not behind and scored > 0,
                           view.name))  # fmt: skip
        if behind:
            details.append(f"{view.name}: behind the faster of {names}\n" + "\n".join(behind))
        ratios = []
        for case, _, _ in view.sweep.cases().values():
            if not case["op"].endswith(("_causal", "_causal_train")):
                continue
            full_op = case["op"].replace("_causal", "")
            full = _variants({"cases": [c for c, _, _ in view.sweep.cases().values()]},
                             full_op, case["shape"], case["dtype"]).get("triton")  # fmt: skip
            masked = _variants({"cases": [case]}, case["op"], case["shape"], case["dtype"])
            if full and "triton" in masked:
                ratios.append(full["median_ms"] / masked["triton"]["median_ms"])
        measured = (
            (
                f"{sum(r >= causal_goal for r in ratios)} of {len(ratios)}; "
                f"{min(ratios):.2f}x to {max(ratios):.2f}x"
            )
            if ratios
            else "not recorded"
        )
        met = all(r >= causal_goal for r in ratios) if ratios else None
        lines.append(_line(causal_target, measured, met, view.name))
    shape, dtype, baseline, goal = targets.ATTENTION_MOONSHOT
    lines.append(_speedup_line(
        f"attention {_label(shape)} {dtype} >= {goal:.2f}x {baseline} (moonshot)",
        views["attention"], "attention", shape, dtype, (baseline,), goal,
    ))  # fmt: skip
    return lines


def _external_lines(record: dict | None, name: str, versus: str | None) -> list[dict]:
    """The head-to-head targets a companion record judged (``versus``: only those)."""
    if record is None:
        what = "Liger-Kernel" if versus == "liger" else "the interleaved comparison"
        return [_line(f"{what} ({name})", "not recorded on this card", None, name)]
    lines = []
    for check in record.get("targets", []):
        if versus is None:
            target = f"{check['case']} >= {check['target']:.2f}x {check['versus']}"
        elif check["versus"] == versus:
            target = f"{check['case']} >= {check['target']:.2f}x Liger-Kernel"
        else:
            continue
        lines.append(_line(target, _ratio(check), check["met"], name))
    return lines


def _ratio(check: dict) -> str:
    return "not measured" if check.get("ratio") is None else f"{check['ratio']:.3f}x"


def _host_line(record: dict) -> dict:
    shape = _label(targets.HOST_COST_SHAPE)
    goal = targets.HOST_COST_RATIO
    target = f"softmax wrapper's host time at {shape} <= {goal:.2f}x torch.softmax"
    rows = {row["wrapper"]: row for row in record.get("rows", []) if row.get("shape") == shape}
    if "reference softmax" not in rows or "torch.softmax" not in rows:
        return _line(target, "not in the record", None, "wrapper-overhead.json")
    ours, theirs = rows["reference softmax"], rows["torch.softmax"]
    # the median of the runs' own ratios where the record has runs (each run's drift cancels)
    ratio = ours.get("ratio_to_torch_softmax")
    if ratio is None:
        ratio = ours["host_us_per_call"] / theirs["host_us_per_call"]
    runs = ours.get("ratio_to_torch_softmax_runs")
    by_run = f"; runs {', '.join(f'{r:.2f}' for r in runs)}" if runs else ""
    measured = (f"{ours['host_us_per_call']:.2f} vs {theirs['host_us_per_call']:.2f} us "
                f"({ratio:.2f}x{by_run})")  # fmt: skip
    if "paired_ratio_to_torch_softmax" in ours:  # samples back to back: the drift cancels
        ratio = ours["paired_ratio_to_torch_softmax"]
        low, high = ours["paired_ratio_quartiles"]
        aa = ""
        if "aa_paired_ratio_to_torch_softmax" in theirs:  # the pairing's A/A test
            aa_low, aa_high = theirs["aa_paired_ratio_quartiles"]
            aa = (f"; A/A torch.softmax against itself "
                  f"{theirs['aa_paired_ratio_to_torch_softmax']:.3f}x "
                  f"({aa_low:.3f}-{aa_high:.3f})")  # fmt: skip
        measured = (f"{ratio:.3f}x, the median of {len(ours['paired_ratios'])} paired samples "
                    f"(quartiles {low:.3f}-{high:.3f}, less time in {ours['paired_faster']}"
                    f"{aa}); shuffled rounds: {measured}")  # fmt: skip
    return _line(target, measured, ratio <= targets.HOST_COST_RATIO, "wrapper-overhead.json")


def _significant(row: dict) -> bool:
    """Slower round after round: a lopsided sign test, lopsided towards the reference losing
    (a case behind by its medians can win most rounds; its p is as small)."""
    pairs = row["paired"]
    return pairs is not None and pairs["p"] < SIGNIFICANT and 2 * pairs["slower"] > pairs["rounds"]


def _detail(title: str, behind: list[dict]) -> str:
    lines = [f"{title}: the cases behind (slower round after round: sign test p < "
             f"{SIGNIFICANT})",
             f"  {'case':34s} {'ratio':>6s} {'vs':8s} {'triton us':>10s} {'best us':>9s} "
             f"{'ranges':>8s} {'paired':>7s} {'rounds slower':>13s} {'p':>7s} "
             f"{'of ceiling':>10s}"]  # fmt: skip
    for row in sorted(behind, key=lambda row: row["ratio"]):
        pairs = row["paired"]
        if pairs is None:
            paired_text = f"{'-':>7s} {'-':>13s} {'-':>7s}"
        else:
            slower = f"{pairs['slower']} of {pairs['rounds']}"
            paired_text = f"{pairs['paired_ratio']:7.3f} {slower:>13s} {pairs['p']:7.4f}"
        lines.append(
            f"  {row['case']:34s} {row['ratio']:6.3f} {row['baseline']:8s} "
            f"{row['triton_us']:10.2f} {row['best_us']:9.2f} "
            f"{'overlap' if row['overlap'] else 'apart':>8s} {paired_text} "
            + (f"{row['of_ceiling']:10.0%}" if row["of_ceiling"] is not None else f"{'-':>10s}")
            + (f"  {row['file']}" if row.get("file") != title.split(":")[0] else "")
        )
    return "\n".join(lines)


def render(results: Path, label: str) -> str:
    try:
        lines, details = scoreboard(results)
    except (KeyError, TypeError, AttributeError, ZeroDivisionError) as error:
        fail(f"{label}: a report there is not shaped as expected ({type(error).__name__}: "
             f"{error})")  # fmt: skip
    width = max(len(line["target"]) for line in lines)
    measured = max(len(line["measured"]) for line in lines)
    met = sum(line["verdict"] == "met" for line in lines)
    noise = sum(line["verdict"] == "met within noise" for line in lines)
    also = f", {noise} more within noise" if noise else ""
    text = [f"{met} of {len(lines)} checks met{also} ({label}; each bandwidth as a share of "
            f"the streaming ceiling its own report measured); a target checked in several "
            f"files has a line for each", ""]  # fmt: skip
    verdicts = max(len(line["verdict"]) for line in lines)
    text.append(f"{'target':{width}s}  {'measured':{measured}s}  {'verdict':{verdicts}s}  from")
    for line in lines:
        text.append(f"{line['target']:{width}s}  {line['measured']:{measured}s}  "
                    f"{line['verdict']:{verdicts}s}  {line['from']}")  # fmt: skip
    return "\n".join([*text, "", *(f"{detail}\n" for detail in details)])


def main(argv=None) -> int:
    parser = OneLineParser(prog="score_targets", description=__doc__.splitlines()[0])
    parser.add_argument("--results", default=RESULTS,
                        help="a card's folder of sweeps (default results/h200)")  # fmt: skip
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", metavar="FILE", help="write the scores to FILE")
    mode.add_argument("--check", metavar="FILE", help="exit 1 if FILE differs from the scores")
    args = parser.parse_args(argv)
    results = ROOT / args.results
    if not results.is_dir():
        fail(f"{args.results} is not a folder")
    label = results.resolve().relative_to(ROOT) if results.resolve().is_relative_to(ROOT) \
        else results  # fmt: skip
    text = render(results, label.as_posix())
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
