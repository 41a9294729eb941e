"""Derive, don't trust: every figure a report could fake is recomputed from the course's code.

A report's numbers are written by the learner's copy of the engine, and a JSON file is easy to
edit. So the grader recomputes from :mod:`learning.ops` whatever does not depend on the timing:

* ``cases`` (:func:`case_findings`): which cases the settings ask for (ops x shapes x dtypes,
  with the registry's default or CPU shapes when no ``--shape`` was given), and that each case's
  shape follows the op's convention (``MxN``, ``MxNxK``), its dtype is one the op supports and
  the settings chose, and its ``logical_bytes``, ``flops`` and eager baseline are the
  registry's. A deleted, added or relabelled case is a finding.
* ``variants`` (:func:`variant_findings`): the variants a run of those settings times: the
  op's PyTorch baselines, ``compile`` when asked, the reference ``triton`` and, for a learner
  run, ``learner``; each with its kind. A reference run relabelled as a learner's lacks one.
* ``correctness``: ``passed: true`` only with ``tolerance_used`` at most 1 (the worst error
  over its bound) and ``max_abs_error`` a number.
* ``copied-samples`` (:func:`copied_samples`): learner samples that equal another variant's of
  the same case, in order or reordered, or equal them up to one constant factor. Two kernels
  timed in the same rounds never produce that by chance.
* ``learner-untimed`` (:func:`learner_gate`): report points are for a learner kernel that
  passed the oracle and was timed; a case where it failed or was skipped earns nothing.
"""

from __future__ import annotations

import math
from collections import Counter

from learning import ops
from learning.grade.findings import Finding

MIN_DISTINCT_SAMPLES = 2  # fewer distinct values cannot show a copy (a constant is a copy of any)


def _label(case: dict) -> str:
    shape = case["shape"]
    shown = "x".join(map(str, shape)) if isinstance(shape, list) else repr(shape)
    return f"{case['op']} {shown} {case['dtype']}"


def expected_cases(settings: dict) -> tuple[list[tuple[str, tuple, str]], list[str]]:
    """The cases a run with these settings measures, and problems with the settings."""
    if settings.get("suite") is not None:
        return _suite_cases(settings)
    try:
        specs = ops.resolve(settings["op"])
    except ValueError as error:
        return [], [str(error)]
    problems = []
    cases = []
    device = settings["device"]
    for spec in specs:
        if settings.get("dtype") is None:
            dtypes = [ops.dtype_name(d) for d in spec.dtypes]
        else:
            dtypes = [settings["dtype"]]
            dtype = ops.DTYPES.get(settings["dtype"])
            if dtype is None or dtype not in spec.dtypes:
                problems.append(f"{spec.name} does not take dtype {settings['dtype']!r}")
        shapes = settings.get("shapes")
        if shapes:
            chosen = []
            for shape in shapes:
                try:
                    chosen.append(spec.validate_shape(shape))
                except ValueError as error:
                    problems.append(f"settings.shapes: {error}")
        else:
            chosen = list(spec.cpu_shapes if device == "cpu" else spec.default_shapes)
        cases += [(spec.name, tuple(shape), dtype) for shape in chosen for dtype in dtypes]
    return cases, problems + _runs_problems(settings, cases, repr(settings["op"]))


def _suite_cases(settings: dict) -> tuple[list[tuple[str, tuple, str]], list[str]]:
    """The cases of the shape suite the settings name, drawn again from its seed."""
    from learning.bench import suite

    try:
        drawn = suite.cases(settings["suite"], settings.get("suite_seed"), settings["device"])
    except ValueError as error:
        return [], [str(error)]
    cases = [(spec.name, shape, dtype) for spec, shape, dtype in drawn]
    return cases, _runs_problems(settings, cases, f"suite {settings['suite']!r}")


def _runs_problems(settings: dict, cases: list, chosen_by: str) -> list[str]:
    """settings.ops and settings.dtypes against what the cases hold."""
    problems = []
    ops_run = list(dict.fromkeys(name for name, _, _ in cases))
    dtypes_run = list(dict.fromkeys(dtype for _, _, dtype in cases))
    if settings.get("ops") != ops_run:
        problems.append(f"settings.ops {settings.get('ops')} is not what {chosen_by} runs")
    if sorted(settings.get("dtypes") or []) != sorted(dtypes_run):
        problems.append(f"settings.dtypes {settings.get('dtypes')} is not what the settings run")
    return problems


def _case_problems(case: dict, settings: dict) -> list[str]:
    spec = ops.OPS.get(case["op"])
    if spec is None:
        return [f"{_label(case)}: op {case['op']!r} is not an op of this course"]
    try:
        shape = spec.validate_shape(case["shape"])
    except ValueError as error:
        return [f"{_label(case)}: {error}"]
    dtype = ops.DTYPES.get(case["dtype"])
    if dtype is None or dtype not in spec.dtypes:
        return [f"{_label(case)}: {spec.name} does not take dtype {case['dtype']!r}"]
    problems = []
    derived = {
        "logical_bytes": spec.logical_bytes(shape, dtype),
        "flops": spec.flops(shape),
        "eager_variant": next(iter(spec.baselines)),
    }
    for key, value in derived.items():
        if case[key] != value:
            problems.append(
                f"{_label(case)}: {key} is {case[key]!r}, but learning.ops gives {value!r} for "
                f"this op, shape and dtype"
            )
    return problems


def case_findings(report: dict) -> list[Finding]:
    """The report's cases against its settings and the registry."""
    settings = report["settings"]
    expected, problems = expected_cases(settings)
    findings = [Finding("settings", problem) for problem in problems]
    for case in report["cases"]:
        findings += [Finding("derived", problem) for problem in _case_problems(case, settings)]
    found = Counter((c["op"], tuple(c["shape"]), c["dtype"]) for c in report["cases"])
    wanted = Counter(expected)
    missing = [k for k in wanted if k not in found]
    extra = [k for k in found if k not in wanted]
    doubled = [k for k, n in found.items() if n > 1]

    def shown(keys) -> str:
        return ", ".join(f"{op} {'x'.join(map(str, shape))} {dtype}" for op, shape, dtype in keys)

    if expected and missing and report["complete"]:
        findings.append(
            Finding(
                "cases",
                f"the settings ask for {len(wanted)} cases, but {len(missing)} are missing: "
                f"{shown(missing[:6])}{' ...' if len(missing) > 6 else ''}",
            )
        )
    if expected and extra:
        findings.append(Finding("cases", f"cases the settings do not ask for: {shown(extra[:6])}"))
    if doubled:
        findings.append(Finding("cases", f"cases listed more than once: {shown(doubled[:6])}"))
    return findings


def expected_variants(spec: ops.OpSpec, settings: dict) -> list[tuple[str, str]]:
    """``(name, kind)`` of every variant a run of ``settings`` times for ``spec``'s cases."""
    variants = [(name, "eager") for name in spec.baselines]
    if settings["compile"]:
        variants.append(("compile", "compile"))
    variants.append(("triton", "triton"))
    if settings["impl"] == "learner":
        variants.append(("learner", "learner"))
    return variants


def variant_findings(report: dict) -> list[Finding]:
    """Each case's variants against those its settings time (extra ``triton:<name>`` variants
    of the reference are allowed)."""
    settings = report["settings"]
    findings = []
    for case in report["cases"]:
        spec = ops.OPS.get(case["op"])
        if spec is None:
            continue
        wanted = expected_variants(spec, settings)
        names = [v["name"] for v in case["variants"]]
        kinds = {v["name"]: v["kind"] for v in case["variants"]}
        missing = [name for name, _ in wanted if name not in kinds]
        unexpected = [
            name
            for name in kinds
            if name not in dict(wanted)
            and not (name.startswith("triton:") and kinds[name] == "triton")
        ]
        wrong_kind = [
            f"{name} ({kinds[name]}, not {kind})"
            for name, kind in wanted
            if name in kinds and kinds[name] != kind
        ]
        problems = []
        if missing:
            problems.append(f"missing {', '.join(missing)}")
        if unexpected:
            problems.append(f"unexpected {', '.join(unexpected)}")
        if wrong_kind:
            problems.append(f"wrong kind: {', '.join(wrong_kind)}")
        if len(names) != len(set(names)):
            problems.append("a variant listed twice")
        if problems:
            findings.append(
                Finding(
                    "variants",
                    f"{_label(case)}: a run of these settings (impl {settings['impl']}) times "
                    f"{', '.join(n for n, _ in wanted)}; this case has {', '.join(names)}: "
                    f"{'; '.join(problems)}",
                )
            )
    return findings


def correctness_findings(report: dict) -> list[Finding]:
    """A passed oracle check must say so in its numbers: ``tolerance_used`` <= 1."""
    findings = []
    for case in report["cases"]:
        for variant in case["variants"]:
            record = variant["correctness"]
            if record.get("passed") is not True:
                continue
            used, error = record.get("tolerance_used"), record.get("max_abs_error")
            where = f"{_label(case)} {variant['name']}"
            if not _number(used) or not _number(error):
                findings.append(
                    Finding(
                        "correctness",
                        f"{where}: passed: true without a tolerance_used and max_abs_error",
                    )
                )
            elif used > 1.0 or used < 0 or error < 0:
                findings.append(
                    Finding(
                        "correctness",
                        f"{where}: passed: true, but tolerance_used is {used:g} (the worst "
                        "error over its bound; above 1 is outside the tolerance, a failure)",
                    )
                )
    return findings


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _same_up_to_factor(ours: list[float], theirs: list[float]) -> bool:
    if len(ours) != len(theirs) or not all(_number(x) and x != 0 for x in ours + theirs):
        return False
    ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
    return max(ratios) - min(ratios) <= 1e-9 * abs(ratios[0])


def copied_samples(case: dict, variant: dict) -> list[str]:
    """The names of the case's other variants whose samples ``variant``'s copy."""
    ours = variant["samples_ms"]
    if len(set(ours)) < MIN_DISTINCT_SAMPLES:
        return []
    copies = []
    for other in case["variants"]:
        theirs = other["samples_ms"]
        if other is variant or len(theirs) != len(ours):
            continue
        if (
            ours == theirs
            or sorted(ours) == sorted(theirs)
            or _same_up_to_factor(ours, theirs)
            or _same_up_to_factor(sorted(ours), sorted(theirs))
        ):
            copies.append(other["name"])
    return copies


def copied_sample_findings(report: dict) -> list[Finding]:
    findings = []
    for case in report["cases"]:
        for variant in case["variants"]:
            if variant["kind"] != "learner" or variant["status"] != "timed":
                continue
            copies = copied_samples(case, variant)
            if copies:
                findings.append(
                    Finding(
                        "copied-samples",
                        f"{_label(case)} learner: its samples are {', '.join(copies)}'s samples "
                        "(the same values, or the same times one constant factor); samples of "
                        "two kernels timed in the same rounds never agree like that",
                    )
                )
    return findings


def learner_gate(report: dict) -> list[Finding]:
    """Report points need a learner kernel that passed the oracle and was timed, every case."""
    if report["settings"]["impl"] != "learner":
        return []
    findings = []
    for case in report["cases"]:
        for variant in case["variants"]:
            if variant["kind"] == "learner" and variant["status"] != "timed":
                why = variant.get("reason") or variant["correctness"].get("reason") or "no reason"
                findings.append(
                    Finding(
                        "learner-untimed",
                        f"{_label(case)}: your kernel was {variant['status']}, not timed ({why}); "
                        "a report earns points only for a kernel that passed the oracle check "
                        "and was timed",
                    )
                )
    return findings


def evidence_findings(report: dict) -> list[Finding]:
    """Everything this module derives, in order."""
    return [
        *case_findings(report),
        *variant_findings(report),
        *correctness_findings(report),
        *copied_sample_findings(report),
        *learner_gate(report),
    ]
