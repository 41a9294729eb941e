"""What a person sees: progress lines on stderr during a sweep, a table on stdout at the end."""

from __future__ import annotations

import sys
import time

from learning.report import compute_bound


class Progress:
    """Throttled progress lines: cases prepared, visits done, an estimate of the time left."""

    def __init__(self, quiet: bool, every_s: float = 2.0):
        self.quiet = quiet
        self.every_s = every_s
        self._last = 0.0
        self._sampling_started: float | None = None

    def _say(self, text: str, force: bool = False) -> None:
        now = time.perf_counter()
        if self.quiet or (not force and now - self._last < self.every_s):
            return
        self._last = now
        print(f"kernel-bench: {text}", file=sys.stderr, flush=True)

    def say(self, text: str) -> None:
        """A progress line, at most one every ``every_s``."""
        self._say(text)

    def note(self, text: str) -> None:
        if not self.quiet:
            print(f"kernel-bench: {text}", file=sys.stderr, flush=True)

    def prepared(self, done: int, total: int, label: str) -> None:
        self._say(f"prepared {done}/{total} cases (last: {label})", force=done == total)

    def visited(self, done: int, total: int) -> None:
        now = time.perf_counter()
        if self._sampling_started is None:
            self._sampling_started = now
        elapsed = now - self._sampling_started
        left = elapsed / done * (total - done) if done else 0.0
        self._say(f"visits {done}/{total} done, about {left:.0f} s left", force=done == total)


RATIO_COLUMNS_NOTE = (
    "vs eager: eager's median over the variant's (above 1: faster); paired: the same ratio "
    "round by round, then the median (drift between rounds cancels); slower: rounds the "
    "variant lost to eager, of those not tied; interval: the paired ratio's 95% interval "
    "over the run's visits; verdict: against eager by the margin (same: the whole interval "
    "within it)."
)


def _shape(case: dict) -> str:
    return "x".join(str(d) for d in case["shape"])


def _ms(value) -> str:
    return "-" if value is None else f"{value * 1e3:.2f}"


def _paired(variant: dict) -> tuple[str, str, str, str]:
    """The paired ratio against eager, the rounds lost to it, its interval and the verdict
    (``-`` where there is none: the field is absent from reports made before it existed)."""
    versus = variant.get("paired_vs_eager")
    if versus is None:
        return "-", "-", "-", "-"
    interval = versus.get("paired_ratio_ci")
    shown = "-" if interval is None else f"{interval[0]:.2f}-{interval[1]:.2f}"
    return (
        f"{versus['paired_ratio']:.2f}x",
        f"{versus['slower']}/{versus['rounds']}",
        shown,
        versus.get("verdict") or "-",
    )


def _footer(report: dict) -> list[str]:
    """What the verdicts left out (throttled rounds) and, with --max-noise, what converged."""
    lines = []
    telemetry = report.get("telemetry")
    if telemetry and telemetry.get("method"):
        seen = ", ".join(telemetry.get("throttle_reasons_seen") or []) or "no throttle reason"
        line = (
            f"telemetry (NVML every {telemetry['interval_ms']:.0f} ms): "
            f"{telemetry['flagged_rounds']} of {telemetry['rounds']} rounds ran throttled "
            f"({seen}; or an SM clock below {telemetry['clock_floor']:g} x "
            f"{telemetry['reference_sm_mhz'] or 0:.0f} MHz); "
            f"{telemetry['excluded_rounds']} left out of the verdicts"
        )
        if telemetry.get("cases_kept_whole"):
            line += f", {telemetry['cases_kept_whole']} cases kept whole (too few clean rounds)"
        lines.append(line + ".")
    elif telemetry:
        lines.append(f"telemetry: none ({telemetry.get('reason')}).")
    settings = report["settings"]
    if settings.get("max_noise") is not None:
        sampled = [case["sampling"] for case in report["cases"] if "sampling" in case]
        done = sum(s["converged"] for s in sampled)
        lines.append(
            f"--max-noise {settings['max_noise']:g}%: {done} of {len(sampled)} cases converged "
            f"(at least {settings['min_samples']} samples; at most {settings['max_seconds']:g} s "
            "of added visits a case)."
        )
    return lines


def format_table(report: dict) -> str:
    """Case, variant, median/min/max (µs), GB/s or TFLOP/s, ratio against eager (of medians,
    then paired by round, and the rounds slower than eager), status."""
    header = (
        "case", "variant", "median us", "min us", "max us", "rate", "vs eager", "paired",
        "slower", "interval", "verdict", "status",
    )  # fmt: skip
    rows = [header]
    for case in report["cases"]:
        label = f"{case['op']} {_shape(case)} {case['dtype']}"
        gemm = compute_bound(case)
        for variant in case["variants"]:
            paired, slower, interval, judged = _paired(variant)
            if variant["status"] != "timed":
                rate = ratio = "-"
            else:
                if gemm and variant["tflops"] is not None:
                    rate = f"{variant['tflops']:.1f} TFLOP/s"
                elif variant["logical_gbps"] is not None:
                    rate = f"{variant['logical_gbps']:.1f} GB/s"
                else:
                    rate = "-"
                ratio = (
                    "-"
                    if variant["ratio_vs_eager"] is None
                    else f"{variant['ratio_vs_eager']:.2f}x"
                )
            status = variant["status"]
            if status != "timed":
                reason = variant.get("reason") or variant["correctness"].get("reason") or ""
                status = f"{status}: {reason}"[:70]
            rows.append(
                (
                    label,
                    variant["name"],
                    _ms(variant["median_ms"]),
                    _ms(variant["min_ms"]),
                    _ms(variant["max_ms"]),
                    rate,
                    ratio,
                    paired,
                    slower,
                    interval,
                    judged,
                    status,
                )
            )
            label = ""
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    lines = []
    for row in rows:
        cells = [
            cell.ljust(width) if i < 2 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row[:-1], widths, strict=True))
        ]
        lines.append("  ".join([*cells, row[-1]]))
    settings = report["settings"]
    modes = f"timing: {settings['timing']}, cache: {settings['cache']}"
    if "margin" in settings:  # absent from reports made before verdicts were recorded
        modes += f", margin: ±{settings['margin'] * 100:g}%"
    if settings["compile"]:  # the variant is named compile in either mode: say which one ran
        modes += f", compile: {settings.get('compile_mode', 'default')}"
    lines.append(RATIO_COLUMNS_NOTE)
    lines.extend(_footer(report))
    lines.append(f"{modes}. {report['timing_note']}")
    return "\n".join(lines)
