"""The verdicts a report records, derived from its samples alone: the engine writes them
(``learning.bench.record``) and the validator re-derives them (``learning.report.validate``).

* :func:`verdicts`: per variant, ``paired_vs_eager`` (its samples against eager's, round by
  round, with an interval drawn over the run's visits and a verdict against the run's margin;
  ``learning.report.stats.paired_verdict``) and, for the
  kernels, ``paired_vs``: the same against every other timed variant of the case. Rounds that
  ran throttled are left out by the rule of ``learning.report.telemetry``.
* :func:`sampling_record`: with ``--max-noise``, each variant's noise and whether the case
  converged.
"""

from __future__ import annotations

from learning.report import telemetry as telemetry_rule
from learning.report.stats import paired_verdict, relative_spread


def case_label(case: dict) -> str:
    """``op shape dtype``, how a case is named in messages and tables."""
    return f"{case['op']} {'x'.join(map(str, case['shape']))} {case['dtype']}"


# The variants compared with every other timed variant of their case, besides eager.
COMPARED_KINDS = ("triton", "learner")


def rounds_per_visit(settings: dict) -> int:
    """How many consecutive rounds each visit of the run timed (the unit of its intervals)."""
    if settings.get("rounds_per_visit"):
        return int(settings["rounds_per_visit"])
    samples, visits = settings.get("samples"), settings.get("visits")
    return max(1, samples // visits) if samples and visits else 1


def verdicts(case: dict, settings: dict) -> dict[str, dict]:
    """Per variant name, its ``paired_vs_eager`` and (kernels) ``paired_vs``, from the rounds
    left after the throttled ones (the engine writes these; the validator re-derives them)."""
    excluded, _ = telemetry_rule.excluded_rounds(case, settings.get("keep_throttled", False))
    margin, per_visit = settings["margin"], rounds_per_visit(settings)
    timed = [v for v in case["variants"] if v["status"] == "timed"]
    eager = next((v for v in timed if v["name"] == case["eager_variant"]), None)
    found = {}
    for variant in case["variants"]:
        entry = {"paired_vs_eager": None}
        if variant["status"] == "timed" and eager is not None and variant is not eager:
            entry["paired_vs_eager"] = paired_verdict(
                variant, eager, margin, rounds_per_visit=per_visit, excluded=excluded
            )
        if variant["kind"] in COMPARED_KINDS:
            others = [v for v in timed if v is not variant and v is not eager]
            entry["paired_vs"] = {
                other["name"]: paired_verdict(
                    variant, other, margin, rounds_per_visit=per_visit, excluded=excluded
                )
                for other in others
            } if variant["status"] == "timed" else {}  # fmt: skip
        found[variant["name"]] = entry
    return found


def sampling_record(case: dict, settings: dict, extra_seconds: float) -> dict:
    """``--max-noise``: each timed variant's noise (relative standard deviation, %) and
    whether every one reached ``--min-samples`` below ``--max-noise``."""
    timed = [v for v in case["variants"] if v["status"] == "timed"]
    noise = {v["name"]: relative_spread(v["samples_ms"]) for v in timed}
    return {
        "converged": converged(case, settings, noise),
        "noise_pct": noise,
        "rounds": max((len(v["samples_ms"]) for v in timed), default=0),
        "extra_seconds": extra_seconds,
    }


def converged(case: dict, settings: dict, noise: dict) -> bool:
    timed = [v for v in case["variants"] if v["status"] == "timed"]
    return bool(timed) and all(
        len(v["samples_ms"]) >= settings["min_samples"]
        and noise[v["name"]] is not None
        and noise[v["name"]] <= settings["max_noise"]
        for v in timed
    )
