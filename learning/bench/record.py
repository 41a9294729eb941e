"""The report of one run, built from the engine's state: figures follow from the samples.

Every derived figure is computed here and nowhere else, the same way the validator
(``learning.report.validate``) recomputes it: median/min/max from ``samples_ms``; logical GB/s
from the registry's bytes and the median; TFLOP/s from its FLOPs; every ratio from the PyTorch
eager median of the same case and timing mode; the paired comparison with eager
(``paired_vs_eager``) from the two variants' samples of the same rounds
(``learning.report.stats``). Cold-cache graph samples have the case's flush-only median
subtracted first.

Newer reports carry more, each also re-derived by the validator: per case, the GPU's state in
each round (``telemetry``: one row per round, and which rounds ran throttled, by the rule of
``learning.report.telemetry``); per kernel or baseline variant, an interval over the visits and a
verdict against eager (inside ``paired_vs_eager``) and, for the kernels, against every other
timed variant (``paired_vs``), each computed from the rounds that did not run throttled; with
``--max-noise``, per case whether its samples converged (``sampling``).
"""

from __future__ import annotations

import datetime
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING

from learning import ops
from learning import report as report_format
from learning.bench.machine import UTILIZATION_WARNING_PERCENT, ClockWarmer, idle_utilization
from learning.report import telemetry as telemetry_rule
from learning.report.verdicts import sampling_record, verdicts

if TYPE_CHECKING:
    from learning.bench.engine import CaseState, Run

TIMING_NOTES = {
    "graph-warm": "graph: a sample is one CUDA-graph replay of {n} back-to-back calls timed with "
    "CUDA events, divided by {n}; Python dispatch is not in the figure; warm L2.",
    "graph-cold-events": "graph, cold L2: a sample is a CUDA-graph replay of {n} x [{flush}, "
    "event, call, event]; the events are recorded inside the graph, so "
    "the figure is the mean device time of a call that starts with a cold L2, whatever the "
    "host's launch time.",
    "graph-cold": "graph, cold L2: a sample is a CUDA-graph replay of {n} x [{flush}, call], "
    "minus the median of a flush-only graph of {n} flushes, divided by "
    "{n}: the device time of a call that starts with a cold L2, whatever the host's launch time.",
    "events": "events: ordinary Python calls with CUDA events around each ({n} per sample); a "
    "kernel shorter than its launch reads as the launch: dispatch-sensitive, not comparable "
    "with graph figures.",
    "cpu": "cpu-interpreter: every figure is a CPU timing (time.perf_counter around synchronous "
    "calls) of Triton's interpreter and PyTorch on the CPU. It tests the pipeline; it says "
    "nothing about any GPU.",
}


FLUSH_WORDS = {
    "read": "read a buffer of twice the L2 (clean lines)",
    "write": "zero a buffer of twice the L2 (dirty lines)",
}


def correctness_record(passed, max_abs_error, tolerance_used, reason) -> dict:
    return {
        "passed": passed,
        "max_abs_error": max_abs_error,
        "tolerance_used": tolerance_used,
        "reason": reason,
    }


def _summary(samples: list[float], logical_bytes: int, flops: int) -> dict:
    median = statistics.median(samples)
    positive = median > 0
    return {
        "samples_ms": samples,
        "median_ms": median,
        "min_ms": min(samples),
        "max_ms": max(samples),
        "logical_gbps": logical_bytes / (median * 1e6) if positive else None,
        "tflops": flops / (median * 1e9) if positive and flops else None,
    }


def recorded_samples(case: CaseState, state) -> list[float]:
    """``state``'s samples as the report records them: cold-cache graph samples less the
    case's flush-only median (none while the flush has no samples)."""
    if case.flush is None:
        return list(state.samples)
    if not case.flush.samples:
        return []
    flush_median = statistics.median(case.flush.samples)
    return [s - flush_median for s in state.samples]


def _case_record(case: CaseState, run: Run) -> dict:
    spec = case.spec
    dtype = ops.dtype_from_name(case.dtype)
    logical_bytes, flops = spec.logical_bytes(case.shape, dtype), spec.flops(case.shape)
    record = {
        "op": spec.name,
        "shape": list(case.shape),
        "dtype": case.dtype,
        "logical_bytes": logical_bytes,
        "flops": flops,
        "eager_variant": next(iter(spec.baselines)),
    }
    if case.flush is not None:
        flush_median = statistics.median(case.flush.samples) if case.flush.samples else None
        record["flush_ms"] = {"samples_ms": case.flush.samples, "median_ms": flush_median}
    if run.telemetry is not None and run.telemetry.available:
        rows = [run.telemetry.round_row(start, end) for start, end in case.windows]
        record["telemetry"] = {"rounds": rows, "flagged": []}  # flagged: once all are known
    variants = []
    for state in case.variants:
        empty = {
            "samples_ms": [],
            "median_ms": None,
            "min_ms": None,
            "max_ms": None,
            "logical_gbps": None,
            "tflops": None,
        }
        status, reason, figures = state.status, state.reason, empty
        if status == "pending":
            status, reason = "skipped", "the run was interrupted before it was checked"
        if status == "ready":
            samples = recorded_samples(case, state)
            if samples:
                status, figures = "timed", _summary(samples, logical_bytes, flops)
            else:
                status, reason = "skipped", "the run was interrupted before it was timed"
        checked = state.correctness or correctness_record(None, None, None, "not checked")
        variants.append(
            {
                "name": state.variant.name,
                "kind": state.variant.kind,
                "status": status,
                "reason": reason,
                "correctness": checked,
                **figures,
                "ratio_vs_eager": None,
                "paired_vs_eager": None,
                **({"method": state.variant.note} if state.variant.note else {}),
            }
        )
    eager = next(v for v in variants if v["name"] == record["eager_variant"])
    for variant in variants:
        if eager["status"] != "timed" or variant["status"] != "timed":
            continue
        if variant["median_ms"] > 0:
            variant["ratio_vs_eager"] = eager["median_ms"] / variant["median_ms"]
    record["variants"] = variants
    return record


def _judge(cases: list[dict], settings: dict, run: Run) -> None:
    """Flag the throttled rounds (against the whole run's clock), then every verdict."""
    reference = telemetry_rule.reference_clock(cases)
    for case in cases:
        if "telemetry" in case:
            case["telemetry"]["flagged"] = telemetry_rule.flagged_rounds(
                case["telemetry"]["rounds"], reference
            )
        judged = verdicts(case, settings)
        for variant in case["variants"]:
            variant.update(judged[variant["name"]])
    if settings.get("max_noise") is not None:
        for case, state in zip(cases, run.cases, strict=True):
            case["sampling"] = sampling_record(case, settings, state.extra_seconds)


def telemetry_summary(cases: list[dict], settings: dict) -> dict:
    """The run's count of rounds, flagged rounds and rounds left out of verdicts."""
    rounds = flagged = excluded = 0
    kept = []
    for case in cases:
        telemetry = case.get("telemetry")
        if not telemetry:
            continue
        rounds += len(telemetry["rounds"])
        flagged += len(telemetry["flagged"])
        left_out, why = telemetry_rule.excluded_rounds(case, settings.get("keep_throttled", False))
        excluded += len(left_out)
        if why:
            kept.append(why)
    reasons = 0
    for case in cases:
        for row in (case.get("telemetry") or {}).get("rounds", []):
            if row is not None and row[4] is not None:
                reasons |= row[4]
    return {
        "rounds": rounds,
        "flagged_rounds": flagged,
        "excluded_rounds": excluded,
        "cases_kept_whole": len(kept),
        "reference_sm_mhz": telemetry_rule.reference_clock(cases),
        "clock_floor": telemetry_rule.CLOCK_FLOOR,
        "throttle_reasons_seen": telemetry_rule.reasons_named(reasons),
    }


def _utilization_record(run: Run) -> dict:
    before = run.utilization.get("before") or {}
    after = run.utilization.get("after") or {}
    for when, reading in (("before", before), ("after", after)):
        value = reading.get("value")
        if value is not None and value >= UTILIZATION_WARNING_PERCENT:
            run.warnings.append(
                f"GPU utilization was {value:.0f}% {when} the run while this process was idle: "
                "another process was using the GPU, so figures may be slow"
            )
    return {
        "before": before.get("value"),
        "after": after.get("value"),
        "method": before.get("method") or after.get("method"),
        "reason": before.get("reason") or after.get("reason"),
    }


def _timing_note(settings: dict, cold_method: str | None = None) -> str:
    if settings["device"] == "cpu":
        key = "cpu"
    elif settings["timing"] == "events":
        key = "events"
    elif settings["cache"] == "cold" and cold_method == "in-graph-events":
        key = "graph-cold-events"
    else:
        key = f"graph-{settings['cache']}"
    flush = FLUSH_WORDS[settings.get("flush", "read")]
    return TIMING_NOTES[key].format(n=settings["iterations"], flush=flush)


def build_report(run: Run) -> dict:
    if run.utilization.get("before") is not None:
        run.utilization["after"] = idle_utilization(run.device, settle_s=0.5)
    files = (
        report_format.engine_files()
        + report_format.implementation_files(run.implementations.modules())
        + run.implementations.learner_files()
        + _learner_process_files(run)
    )
    now = time.time()
    data = {
        "schema_version": report_format.SCHEMA_VERSION,
        "complete": run.complete,
        "timing_note": _timing_note(run.settings, getattr(run.timer, "cold_method", None)),
        "started_at": _iso(run.started),
        "finished_at": _iso(now),
        "duration_s": now - run.started,
        "settings": run.settings,
        "environment": run.environment,
        "gpu_utilization_percent": _utilization_record(run),
        "warmup": (run.warmer or ClockWarmer(enabled=False)).record(),
        "numerics_policy": run.numerics,
        "warnings": run.warnings,
        "cases": [_case_record(case, run) for case in run.cases],
        "fingerprint": report_format.fingerprint_record(files),
        "source_snapshots": {},
    }
    _judge(data["cases"], run.settings, run)
    sampler = run.telemetry
    data["telemetry"] = {
        **(sampler.record() if sampler else {"method": None, "reason": "nothing was sampled",
                                             "interval_ms": None, "readings": 0}),
        **telemetry_summary(data["cases"], run.settings),
    }  # fmt: skip
    return data


def _learner_process_files(run: Run) -> list[Path]:
    """The course's code that ran the learner's function in its own process (it recorded the
    launches the learner variant replays)."""
    if run.implementations.learner is None:
        return []
    from learning.bench import learner

    return [learner.WORKER_PROGRAM]


def _iso(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat(timespec="seconds")
