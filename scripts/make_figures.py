"""Draw the lessons' figures from the recorded H200 runs in results/h200/.

    python scripts/make_figures.py            # write lessons/figures/h200-*.png
    python scripts/make_figures.py --check    # exit 1 if a figure is missing or out of date

What is drawn, from whichever of these files exist (a missing one is skipped with a note):

* kernel-bench reports ``all.json``, ``all-cold.json``, ``training.json``, ``gemm-bf16.json``:
  ``h200-<report>-ratios.png``, each variant's speed against PyTorch eager per case (above 1 is
  faster than eager); ``h200-<report>-bandwidth.png``, logical GB/s of the memory-bound cases
  against the H200's measured streaming ceiling; ``h200-<report>-tflops.png`` for GEMM cases.
* ``clock-probe.json`` (scripts/gpu_clock_probe.py): ``h200-clock-probe.png``, how slow a
  short kernel runs right after the GPU idled, and how long a warm-up burst keeps it fast.
* ``stability.json`` (scripts/benchmark_stability.py): ``h200-stability.png``, how far each
  case's Triton/eager ratio moved between identical sweeps, against the ±2 % / ±5 % targets.
* ``gemm-regimes.json`` (scripts/gemm_regimes.py): ``h200-gemm-regimes.png``, each GEMM
  kernel's rate and SM clock, timed alone, from a rested GPU to its power limit.

The two script outputs may be script records (``learning.report.write_record``): what is drawn
is the record's ``data``; the file as a whole, less the snapshots of the sources it measured, is
what the figure's hash is taken of.

Every figure names its source file, GPU and settings in its footer, and carries the source's
SHA-256 in its PNG metadata: ``--check`` compares that hash with the file as it is now, which
is reliable where modification times are not (a fresh clone gives every file the same age).
A kernel-bench report is validated first; one that does not follow the schema is not drawn.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
SCRIPTS = Path(__file__).resolve().parent
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

from report_results import STREAMING_CEILING_GBPS  # noqa: E402  (one ceiling for every chart)

RESULTS = ROOT / "results" / "h200"
FIGURES = ROOT / "lessons" / "figures"
BENCH_REPORTS = ("all", "all-cold", "training", "gemm-bf16")
CLOCK_PROBE = "clock-probe"
STABILITY = "stability"
GEMM_REGIMES = "gemm-regimes"
SOURCE_KEY = "Source-SHA256"  # the PNG text chunk that records which data a figure shows
KIND_COLORS = {"eager": "#7f7f7f", "compile": "#ff7f0e", "triton": "#1f77b4", "learner": "#2ca02c"}


def sha256(path: Path) -> str:
    """The hash of what a figure can show of ``path``: the file's JSON less its
    ``source_snapshots`` (preserving the sources a report measured draws nothing new), in a
    canonical form; a file that is not JSON, its bytes."""
    content = path.read_bytes()
    try:
        data = json.loads(content)
    except ValueError:
        return hashlib.sha256(content).hexdigest()
    if isinstance(data, dict):
        data = {key: value for key, value in data.items() if key != "source_snapshots"}
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(figure, path: Path, source: Path, footer: str) -> None:
    # wrapped to the figure's width (about 190 characters of 7-point text per 10 inches)
    per_line = max(60, int(figure.get_figwidth() * 19))
    footer = "\n".join(textwrap.wrap(footer, per_line))
    lines = footer.count("\n") + 1
    bottom = 0.012 * lines * 5 / figure.get_figheight()
    figure.text(0.01, 0.005, footer, fontsize=7, color="#555555", ha="left", va="bottom")
    figure.tight_layout(rect=(0, bottom + 0.01, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    # No "Software" entry (it names the matplotlib version): the same data gives the same bytes.
    figure.savefig(path, dpi=110, metadata={"Software": None, SOURCE_KEY: sha256(source)})
    _pyplot().close(figure)


def _case_label(case: dict) -> str:
    return f"{case['op']}\n{'x'.join(map(str, case['shape']))}\n{case['dtype']}"


def _report_footer(report: dict, source: Path) -> str:
    settings, env = report["settings"], report["environment"]
    commit = (env.get("git_commit") or "?")[:10] + (" (dirty)" if env.get("git_dirty") else "")
    return (
        f"{_display(source)}: {env.get('gpu_name') or 'CPU (interpreter)'}, "
        f"timing {settings['timing']}, {settings['cache']} cache, {settings['samples']} samples "
        f"over {settings['visits']} visits, torch {env['torch']}, triton {env['triton']}, "
        f"commit {commit}"
    )


def _bars(
    axis,
    cases: list[dict],
    value: Callable[[dict], float | None],
    skip_baseline: bool,
    labels: dict[str, str],
):
    """One group of bars per case, one bar per variant name, coloured by the variant's kind;
    ``labels`` renames variants in the legend."""
    names: dict[str, str] = {}
    for case in cases:
        for variant in case["variants"]:
            if not (skip_baseline and variant["name"] == case["eager_variant"]):
                names.setdefault(variant["name"], variant["kind"])
    width = 0.8 / max(1, len(names))
    shades = {}
    for offset, (name, kind) in enumerate(names.items()):
        xs, heights = [], []
        for index, case in enumerate(cases):
            variant = next((v for v in case["variants"] if v["name"] == name), None)
            if variant is None or variant["status"] != "timed" or value(variant) is None:
                continue
            xs.append(index + (offset - (len(names) - 1) / 2) * width)
            heights.append(value(variant))
        # Variants of one kind (triton, triton:<plan>) share a hue, lighter for each later one.
        alpha = 1.0 - 0.25 * shades.get(kind, 0)
        shades[kind] = shades.get(kind, 0) + 1
        axis.bar(xs, heights, width, label=labels.get(name, name), color=KIND_COLORS.get(kind),
                 alpha=max(alpha, 0.3))  # fmt: skip
    axis.set_xticks(range(len(cases)))
    axis.set_xticklabels([_case_label(case) for case in cases], fontsize=7)


def _is_gemm(case: dict) -> bool:
    return case["op"].startswith("matmul")


def _by_dtype(cases: list[dict]) -> list[list[dict]]:
    """The cases in one panel per dtype (in the report's order): a sweep of every dtype has
    87 cases, too many for one row of labelled bars."""
    groups: dict[str, list[dict]] = {}
    for case in cases:
        groups.setdefault(case["dtype"], []).append(case)
    return list(groups.values())


def _panels(plt, cases: list[dict], value, skip_baseline: bool, labels: dict[str, str]):
    """A figure with one row of bars per dtype; the figure and its axes."""
    groups = _by_dtype(cases)
    widest = max(len(group) for group in groups)
    figure, axes = plt.subplots(
        len(groups), 1, figsize=(max(8, 0.9 * widest), 4.2 * len(groups)), squeeze=False
    )
    for axis, group in zip(axes[:, 0], groups, strict=True):
        _bars(axis, group, value, skip_baseline, labels)
    return figure, list(axes[:, 0]), [group[0]["dtype"] for group in groups]


def bench_figures(report: dict, source: Path, out: Path) -> list[Path]:
    """The ratio figure, and the GB/s and TFLOP/s figures where the report has such cases;
    each with one panel per dtype."""
    plt = _pyplot()
    stem, settings = source.stem, report["settings"]
    footer = _report_footer(report, source)
    cases = report["cases"]
    where = f"{settings['op']} ({settings['cache']} cache)"
    mode = settings.get("compile_mode", "default")  # reports before --compile-mode: default
    labels = {"compile": f"compile ({mode})"} if mode != "default" else {}
    written = []

    figure, axes, dtypes = _panels(plt, cases, lambda v: v["ratio_vs_eager"], True, labels)
    for axis, dtype in zip(axes, dtypes, strict=True):
        axis.axhline(1.0, color="black", linewidth=0.8, label="PyTorch eager (baseline)")
        axis.set_yscale("log")  # from 0.4x to 14x: equal steps for equal factors
        axis.yaxis.set_major_formatter(lambda y, _: f"{y:g}")
        axis.yaxis.set_minor_formatter(lambda y, _: f"{y:g}" if y in (0.5, 2, 3, 5) else "")
        axis.set_ylabel("eager median / variant median")
        axis.set_title(f"{where}, {dtype}: speed against PyTorch eager (above 1: faster)")
    axes[0].legend(fontsize=7)
    written.append(out / f"h200-{stem}-ratios.png")
    _save(figure, written[-1], source, footer)

    streaming = [case for case in cases if not _is_gemm(case)]
    if streaming:
        figure, axes, dtypes = _panels(plt, streaming, lambda v: v["logical_gbps"], False, labels)
        ceiling = f"measured streaming ceiling, {STREAMING_CEILING_GBPS / 1e3:.2f} TB/s logical"
        for axis, dtype in zip(axes, dtypes, strict=True):
            axis.axhline(STREAMING_CEILING_GBPS, color="red", linestyle="--", label=ceiling)
            axis.set_ylabel("logical GB/s (logical bytes / median time)")
            axis.set_title(f"{where}, {dtype}: bandwidth of the memory-bound cases")
        axes[0].legend(fontsize=7)
        written.append(out / f"h200-{stem}-bandwidth.png")
        _save(figure, written[-1], source, footer)

    gemm = [case for case in cases if _is_gemm(case)]
    if gemm:
        figure, axes, dtypes = _panels(plt, gemm, lambda v: v["tflops"], False, labels)
        for axis, dtype in zip(axes, dtypes, strict=True):
            axis.set_ylabel("TFLOP/s (2MNK / median time)")
            axis.set_title(f"{where}, {dtype}: GEMM throughput")
        axes[0].legend(fontsize=7)
        written.append(out / f"h200-{stem}-tflops.png")
        _save(figure, written[-1], source, footer)
    return written


def clock_probe_figure(probe: dict, source: Path, out: Path) -> list[Path]:
    """Slowdown against steady state: after an idle pause (left), after a burst and a gap."""
    plt = _pyplot()
    steady = probe["steady_us"]
    figure, (after_idle, after_burst) = plt.subplots(1, 2, figsize=(11, 4.5))
    curve = probe["curve"]
    after_idle.plot(
        [max(point["t_ms"], 1e-3) for point in curve],
        [point["us_per_call"] / steady for point in curve],
        ".",
        markersize=2,
        label="each replay",
    )
    buckets = probe.get("curve_buckets") or []
    if buckets:
        after_idle.step(
            [b["from_ms"] or 1e-3 for b in buckets],
            [b["vs_steady"] for b in buckets],
            where="post",
            color="black",
            label="median per interval",
        )
    after_idle.axhline(1.0, color="green", linestyle="--", label=f"steady: {steady:.2f} µs/call")
    after_idle.set_xscale("log")
    after_idle.set_xlabel("ms since the first call after the pause")
    after_idle.set_ylabel("time per call / steady state")
    after_idle.set_title(f"after {probe['pause_s']:.0f} s idle")
    after_idle.legend(fontsize=7)

    rows = probe["after_burst"]
    after_burst.plot([r["gap_ms"] for r in rows], [r["vs_steady"] for r in rows], "o-")
    after_burst.axhline(1.0, color="green", linestyle="--")
    after_burst.set_xscale("symlog", linthresh=50)
    after_burst.set_xlim(left=0)
    after_burst.set_xlabel("idle gap after a 200 ms burst (ms)")
    after_burst.set_ylabel("first replay / steady state")
    after_burst.set_title("after a 200 ms GEMM burst: slower, for seconds")
    gpu = probe.get("environment", {}).get("gpu_name") or "GPU"
    footer = f"{_display(source)}: {gpu}, {probe.get('kernel', '')}"
    path = out / "h200-clock-probe.png"
    _save(figure, path, source, footer)
    return [path]


def stability_figure(stability: dict, source: Path, out: Path) -> list[Path]:
    """Each case's ratio in each sweep, as a deviation from that case's median over the sweeps."""
    import statistics

    plt = _pyplot()
    settings, results = stability["settings"], stability["results"]
    caches = list(results)
    figure, axes = plt.subplots(
        len(caches), 1, figsize=(11, 3.5 * max(1, len(caches))), squeeze=False
    )
    for axis, cache in zip(axes[:, 0], caches, strict=True):
        sweeps = results[cache]["per_sweep_ratios"]
        keys = sorted(set.intersection(*(set(s) for s in sweeps))) if sweeps else []
        for index, key in enumerate(keys):
            values = [sweep[key] for sweep in sweeps]
            center = statistics.median(values)
            axis.plot(
                [index] * len(values),
                [100 * (v / center - 1) for v in values],
                "o",
                color="#1f77b4",
                markersize=3,
            )
        for limit, style, label in (
            (settings.get("target_median", 0.02), ":", "median target"),
            (settings.get("target_worst", 0.05), "--", "worst target"),
        ):
            axis.axhline(
                100 * limit, color="red", linestyle=style, label=f"{label} ±{100 * limit:g}%"
            )
            axis.axhline(-100 * limit, color="red", linestyle=style)
        summary = results[cache]
        median, worst = summary.get("median_deviation"), summary.get("worst_deviation")
        measured = (
            f"median {100 * median:.2f} %, worst {100 * worst:.2f} %"
            if median is not None and worst is not None
            else "no case in every sweep"
        )
        axis.set_title(f"{cache} cache, {len(sweeps)} sweeps: {measured}")
        axis.set_ylabel("ratio vs its median (%)")
        axis.set_xticks(range(len(keys)))
        axis.set_xticklabels([key.replace(" ", "\n", 2) for key in keys], fontsize=6)
        axis.legend(fontsize=7)
    footer = (
        f"{_display(source)}: op {settings.get('op')}, {settings.get('dtype')}, "
        f"{settings.get('samples')} samples over {settings.get('visits')} visits per sweep"
    )
    path = out / "h200-stability.png"
    _save(figure, path, source, footer)
    return [path]


def gemm_regimes_figure(regimes: dict, source: Path, out: Path) -> list[Path]:
    """Per shape: each variant's TFLOP/s (top) and SM clock (bottom) in each time window after
    it started alone, the median over the rounds."""
    import statistics

    plt = _pyplot()
    rows = regimes["rows"]
    shapes = list(dict.fromkeys((row["shape"], row["dtype"]) for row in rows))
    variants = list(dict.fromkeys(row["variant"] for row in rows))
    figure, axes = plt.subplots(2, len(shapes), figsize=(4.2 * len(shapes), 6.5), squeeze=False)
    for column, (shape, dtype) in enumerate(shapes):
        rate_axis, clock_axis = axes[0, column], axes[1, column]
        for variant in variants:
            mine = [r for r in rows if (r["shape"], r["dtype"], r["variant"]) == (shape, dtype,
                                                                                    variant)]
            windows = list(dict.fromkeys(tuple(r["window_ms"]) for r in mine))
            labels = [f"{low:g}–{high:g}" for low, high in windows]
            for axis, key in ((rate_axis, "tflops"), (clock_axis, "sm_mhz")):
                values = [statistics.median(r[key] for r in mine if tuple(r["window_ms"]) == w)
                          for w in windows]  # fmt: skip
                axis.plot(labels, values, "o-", label=variant)
        rate_axis.set_title(f"{shape} {dtype}, each alone")
        rate_axis.set_ylabel("TFLOP/s")
        clock_axis.set_ylabel("SM clock (MHz, NVML)")
        clock_axis.set_xlabel("ms after the start")
        rate_axis.legend(fontsize=7)
    settings = regimes.get("args", {})
    gpu = regimes.get("environment", {}).get("device") or "GPU"
    footer = (
        f"{_display(source)}: {gpu}; each variant alone after {settings.get('rest_s')} s idle, "
        f"{settings.get('seconds')} s of 30-call graphs back to back, "
        f"{settings.get('rounds')} rounds (medians)"
    )
    path = out / "h200-gemm-regimes.png"
    _save(figure, path, source, footer)
    return [path]


def _bench_drawer(report: dict, source: Path, out: Path) -> list[Path]:
    from learning.report import consistency_problems, schema_problems

    problems = schema_problems(report)
    if problems:
        raise ValueError(f"not a valid report ({len(problems)} problem(s)): {problems[0]}")
    for problem in consistency_problems(report):
        print(f"make_figures: {_display(source)}: warning: {problem}", file=sys.stderr)
    return bench_figures(report, source, out)


def sources(results: Path) -> list[tuple[Path, Callable[[dict, Path, Path], list[Path]]]]:
    """Every source file this script draws from, with the function that draws it."""
    table = [(results / f"{name}.json", _bench_drawer) for name in BENCH_REPORTS]
    table.append((results / f"{CLOCK_PROBE}.json", clock_probe_figure))
    table.append((results / f"{STABILITY}.json", stability_figure))
    table.append((results / f"{GEMM_REGIMES}.json", gemm_regimes_figure))
    return table


def expected_figures(source: Path) -> list[Path]:
    """The figure names a source should have produced (which ones depend on its cases)."""
    if source.stem == CLOCK_PROBE:
        return ["h200-clock-probe.png"]
    if source.stem == STABILITY:
        return ["h200-stability.png"]
    if source.stem == GEMM_REGIMES:
        return ["h200-gemm-regimes.png"]
    cases = _load(source).get("cases") or []
    names = [f"h200-{source.stem}-ratios.png"]
    if any(not _is_gemm(case) for case in cases):
        names.append(f"h200-{source.stem}-bandwidth.png")
    if any(_is_gemm(case) for case in cases):
        names.append(f"h200-{source.stem}-tflops.png")
    return names


def _load(source: Path) -> dict:
    """A recorded file's data: a script record's ``data``, or the report as it is."""
    from learning.report import load_data

    return load_data(source)


def recorded_source_hash(figure: Path) -> str | None:
    from PIL import Image

    with Image.open(figure) as image:
        return image.text.get(SOURCE_KEY)


def make(results: Path, out: Path) -> int:
    failed = 0
    for source, draw in sources(results):
        if not source.is_file():
            print(f"make_figures: {_display(source)}: not recorded yet, skipped")
            continue
        try:
            written = draw(_load(source), source, out)
        except (ValueError, KeyError, TypeError) as error:
            print(f"make_figures: {_display(source)}: cannot draw it: {error}", file=sys.stderr)
            failed += 1
            continue
        for path in written:
            print(f"make_figures: wrote {_display(path)}")
    return 1 if failed else 0


def check(results: Path, out: Path) -> int:
    stale = []
    for source, _ in sources(results):
        if not source.is_file():
            print(f"make_figures: {_display(source)}: not recorded yet, no figure expected")
            continue
        digest = sha256(source)
        for name in expected_figures(source):
            figure = out / name
            if not figure.is_file():
                stale.append(f"{_display(figure)} is missing")
            elif recorded_source_hash(figure) != digest:
                stale.append(f"{_display(figure)} was not drawn from {_display(source)} as it is")
    for line in stale:
        print(f"make_figures: {line}")
    if stale:
        print("make_figures: run `python scripts/make_figures.py` to redraw them")
        return 1
    print("make_figures: every figure is up to date")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--results", type=Path, default=RESULTS, help="where the runs are")
    parser.add_argument("--figures", type=Path, default=FIGURES, help="where the PNGs go")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if a figure is missing or out of date"
    )
    args = parser.parse_args(argv)
    return (check if args.check else make)(args.results, args.figures)


if __name__ == "__main__":
    sys.exit(main())
