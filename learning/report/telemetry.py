"""Which rounds of a case ran on a throttled GPU: the rule, from what a report stores.

While kernel-bench samples, a thread reads the GPU's state through NVML every few
milliseconds (``learning.bench.telemetry``). Each round of a case (every variant timed once,
back to back) is summarised by the readings taken during it, or the one nearest to it when
the round was shorter than the interval, as one row of :data:`ROUND_FIELDS`.

A round is *flagged* when, during it,

* a clock-event reason that means throttling was active (:data:`THROTTLE_REASONS`: the
  software power cap, a hardware slowdown, thermal slowdowns, the power brake), or
* the SM clock fell below :data:`CLOCK_FLOOR` of the run's reference clock: the median over
  all the run's rounds of their lowest SM clock.

Idle, the applications-clocks setting, sync boost and the display clock are not throttling:
they say what the clock was set to, not that the GPU slowed under load.

Flagged rounds are left out of the paired verdicts (``learning.report.stats``) unless the run
was asked to keep them (``--keep-throttled``), or unless fewer than ``MIN_ROUNDS`` rounds of
a case would be left, in which case every round is kept and the report says so. The rule is
computed from the stored rows alone, so the validator re-derives it from the report.
"""

from __future__ import annotations

import statistics

from learning.report.stats import MIN_ROUNDS

# One round's summary: the lowest SM and memory clock (MHz), the highest power (W) and
# temperature (°C), and every clock-event reason seen (NVML's bit mask, OR-ed); None where
# NVML did not answer.
ROUND_FIELDS = ("sm_mhz_min", "memory_mhz_min", "power_w_max", "temperature_c_max", "reasons")
CLOCK_FLOOR = 0.85
THROTTLE_REASONS = {
    0x4: "software power cap",
    0x8: "hardware slowdown",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake",
}
THROTTLE_MASK = sum(THROTTLE_REASONS)


def reference_clock(cases: list[dict]) -> float | None:
    """The median over every round of every case of its lowest SM clock (None: no clock)."""
    clocks = [
        row[0]
        for case in cases
        for row in (case.get("telemetry") or {}).get("rounds", [])
        if row is not None and row[0] is not None
    ]
    return statistics.median(clocks) if clocks else None


def flagged_rounds(rows: list, reference_mhz: float | None, floor: float = CLOCK_FLOOR) -> list:
    """Indices of the rounds in ``rows`` that ran throttled or below ``floor`` x the clock."""
    flagged = []
    for index, row in enumerate(rows):
        if row is None:
            continue
        sm, reasons = row[0], row[4]
        slow = sm is not None and reference_mhz is not None and sm < floor * reference_mhz
        if slow or (reasons is not None and reasons & THROTTLE_MASK):
            flagged.append(index)
    return flagged


def excluded_rounds(case: dict, keep_throttled: bool) -> tuple[list, str | None]:
    """The rounds of ``case`` left out of its verdicts, and why every round was kept (None
    when the flagged ones were left out, or none were flagged)."""
    telemetry = case.get("telemetry")
    if not telemetry:
        return [], None
    flagged, rounds = telemetry["flagged"], len(telemetry["rounds"])
    if not flagged:
        return [], None
    if keep_throttled:
        return [], "--keep-throttled"
    if rounds - len(flagged) < MIN_ROUNDS:
        return [], f"fewer than {MIN_ROUNDS} rounds ran unthrottled"
    return list(flagged), None


def reasons_named(mask: int) -> list[str]:
    return [name for bit, name in THROTTLE_REASONS.items() if mask & bit]
