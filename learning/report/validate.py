"""Is a report what it claims to be? Three questions, each answered by one function, after
a fourth that every file must pass.

0. :func:`read_report`: is the file a JSON document a report can be: at most
   :data:`MAX_REPORT_BYTES`, strict JSON (no ``NaN`` or ``Infinity``, no key twice in one
   object), nested at most :data:`MAX_NESTING` deep, every number finite
   (:func:`structure_problems`, which :func:`validate` also asks of a report already loaded)?
1. :func:`schema_problems`: does it follow the JSON Schema of its version (an unknown
   ``schema_version`` is rejected before anything else)? The schema lists every field each
   object may hold: a field the engine does not write is a problem.
2. :func:`fingerprint_problems`: is every file the run executed still the file that was
   measured, or preserved as a snapshot with the recorded hash? A file is compared by its
   normalised hash where the report records one (a comment or docstring edited since the run
   changes nothing), by its sha256 otherwise. Files the run did not execute are not looked at.
   And is the fingerprint complete: does it name every file each case's closure needs
   (:func:`learning.report.binding.incomplete`: the engine core, the op's definition, its
   kernels), each named when missing?
3. :func:`consistency_problems`: do the summary figures follow from the samples: median, min
   and max from ``samples_ms``, GB/s from the logical bytes and the median, TFLOP/s from the
   FLOPs, every ratio from the PyTorch eager median of the same case, and (where a report has
   it) ``paired_vs_eager`` from the variant's and eager's samples of the same rounds? In a
   report that records verdicts (its settings have a ``margin``): every interval and verdict
   (``learning.report.verdicts``), which rounds ran throttled (``learning.report.telemetry``)
   and, with ``--max-noise``, whether each case converged. And does each case (op, shape,
   dtype) appear once?

:func:`validate` asks all of them and returns one line per problem (an empty list: valid).

What none of them can see is a forgery that is consistent: samples typed in by hand, with
every figure derived from them as the engine would, over code whose fingerprint is right.
The validator proves that a report is complete and agrees with itself and with the code; that
its samples were measured is the instructor's to establish, by timing the submitted code
again (``learning.grade --retime``).
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from functools import lru_cache
from pathlib import Path

from learning.report import telemetry as telemetry_rule
from learning.report.binding import incomplete
from learning.report.fingerprint import REPO_ROOT, SCHEMA_PATH, file_hashes, resolve_report_path
from learning.report.stats import paired, relative_spread
from learning.report.verdicts import case_label, converged, verdicts

SCHEMA_VERSION = 2
# What a file must stay within to be read as a report at all, here and by the grader
# (learning.grade.loading). The largest recorded report or script record is 0.8 MB and the
# deepest nests 10 levels; a --max-noise sweep of every op at 300 samples stays near 10 MB.
MAX_REPORT_BYTES = 20 * 10**6
MAX_NESTING = 64  # arrays and objects inside one another, the outermost counted as 1
# jsonschema registers a checker for every string "format" it finds a library for when it is
# first imported, and building one of them (rfc3987_syntax's grammar) takes a second. The
# course's schemas use no "format" (a test sees to it) and validate without a format checker,
# so these libraries are hidden from that import: they could change no verdict.
_FORMAT_LIBRARIES = ("fqdn", "idna", "isoduration", "jsonpointer", "rfc3339_validator",
                     "rfc3986_validator", "rfc3987", "rfc3987_syntax", "uri_template",
                     "webcolors")  # fmt: skip


def _jsonschema():
    """The ``jsonschema`` module, imported without its format libraries if not yet imported."""
    if "jsonschema" in sys.modules:
        return sys.modules["jsonschema"]
    hidden = [name for name in _FORMAT_LIBRARIES if name not in sys.modules]
    sys.modules.update(dict.fromkeys(hidden))  # None there: "import name" raises ImportError
    try:
        import jsonschema
    finally:
        for name in hidden:
            if sys.modules.get(name, ...) is None:
                del sys.modules[name]
    return jsonschema


@lru_cache(maxsize=1)
def load_schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


@lru_cache(maxsize=2)
def _validator(path: Path):
    return _jsonschema().Draft202012Validator(json.loads(path.read_text()))


class UnreadableReport(ValueError):
    """A file that cannot be a report; the message says why, in one line."""


def _strict_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _unique_keys(pairs: list) -> dict:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        twice = next(key for key in keys if keys.count(key) > 1)
        raise ValueError(f"the key {twice!r} appears twice in one object")
    return dict(pairs)


def read_report(path: Path) -> object:
    """The JSON document in the file at ``path``, or :class:`UnreadableReport` saying in one
    line why it cannot be a report: missing or unreadable, larger than
    :data:`MAX_REPORT_BYTES` (never read whole), not UTF-8, not strict JSON, or a
    :func:`structure_problems` (too deep, a number that is not finite)."""
    document = _read_json(path)
    problems = structure_problems(document)
    if problems:
        raise UnreadableReport(problems[0])
    return document


def _read_json(path: Path) -> object:
    """:func:`read_report` less :func:`structure_problems`."""
    path = Path(path)
    try:
        with open(path, "rb") as stream:
            data = stream.read(MAX_REPORT_BYTES + 1)
    except FileNotFoundError:
        raise UnreadableReport("no such file") from None
    except IsADirectoryError:
        raise UnreadableReport("a folder, not a report") from None
    except OSError as error:
        raise UnreadableReport(f"cannot be read ({error.strerror or error})") from None
    if len(data) > MAX_REPORT_BYTES:
        raise UnreadableReport(
            f"larger than {MAX_REPORT_BYTES / 1e6:g} MB (MAX_REPORT_BYTES): not read as a report"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UnreadableReport("not UTF-8 text, so not JSON") from None
    try:
        document = json.loads(text, parse_constant=_strict_constant,
                              object_pairs_hook=_unique_keys)  # fmt: skip
    except json.JSONDecodeError as error:
        raise UnreadableReport(f"not JSON ({error.msg}, line {error.lineno})") from None
    except RecursionError:
        raise UnreadableReport(f"nested deeper than {MAX_NESTING} levels (MAX_NESTING)") from None
    except ValueError as error:  # the hooks above, or an integer too long to convert
        raise UnreadableReport(f"not JSON ({' '.join(str(error).split())})") from None
    return document


def structure_problems(document: object) -> list[str]:
    """What no report can hold, whatever its schema: nesting deeper than :data:`MAX_NESTING`
    (named once), and each number that is not finite (NaN or infinite), named by where it is.
    Walked without recursion, so any depth is answered."""
    stack = [(document, 1, "")] if isinstance(document, dict | list) else []
    while stack:  # the containers only: a report's numbers are most of its nodes
        node, depth, where = stack.pop()
        if depth > MAX_NESTING:
            parts = where.split("/")
            shown = "/".join(parts[:3]) + ("/..." if len(parts) > 3 else "")
            return [f"nested deeper than {MAX_NESTING} levels (MAX_NESTING), in {shown}"]
        items = node.items() if isinstance(node, dict) else enumerate(node)
        stack += [(value, depth + 1, f"{where}/{key}" if where else str(key))
                  for key, value in items if isinstance(value, dict | list)]  # fmt: skip
    try:
        json.dumps(document, allow_nan=False)  # finds a NaN or an infinity at C speed
        return []
    except ValueError:
        pass
    problems, stack = [], [(document, "")]
    while stack:
        node, where = stack.pop()
        if isinstance(node, dict | list):
            items = node.items() if isinstance(node, dict) else enumerate(node)
            stack += [(value, f"{where}/{key}" if where else str(key)) for key, value in items]
        elif isinstance(node, float) and not math.isfinite(node):
            problems.append(f"{where or '(top level)'}: {node} is not a finite number")
    return sorted(problems)


def _close(recorded: object, derived: float | None) -> bool:
    if derived is None or recorded is None:
        return recorded is None and derived is None
    if not isinstance(recorded, int | float):
        return False
    return math.isclose(recorded, derived, rel_tol=1e-9, abs_tol=1e-12)


@lru_cache(maxsize=1)
def _compiled():
    """The schema compiled by ``fastjsonschema`` (installed with the course's tools), or None
    without it or for a schema it rejects."""
    try:
        import fastjsonschema
    except ImportError:
        return None
    schema = json.loads(SCHEMA_PATH.read_text())
    # Every keyword the schema uses means the same in draft 7, which fastjsonschema knows.
    schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    try:
        return fastjsonschema.compile(schema), fastjsonschema.JsonSchemaException
    except Exception:
        return None


def fast_valid(report: object) -> bool:
    """True when the compiled schema accepts ``report``; False when it does not, or is not
    installed. It only decides the common case, a valid report: whenever it finds a problem,
    ``jsonschema`` decides and gives the words (a test holds the two to one verdict)."""
    compiled = _compiled()
    if compiled is None or not isinstance(report, dict):
        return False
    if report.get("schema_version") != SCHEMA_VERSION:
        return False
    validate, rejected = compiled
    try:
        validate(report)
    except (rejected, RecursionError, ValueError, TypeError):
        return False
    return True


def schema_problems(report: object) -> list[str]:
    if not isinstance(report, dict):
        return [f"a report is a JSON object, got {type(report).__name__}"]
    version = report.get("schema_version")
    if version != SCHEMA_VERSION:
        return [f"unsupported schema_version {version!r}; this validator reads {SCHEMA_VERSION}"]
    if fast_valid(report):
        return []
    problems = []
    errors = _validator(SCHEMA_PATH).iter_errors(report)
    for error in sorted(errors, key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        problems.append(f"schema: {where}: {error.message}")
    return problems


def fingerprint_problems(report: dict, repo_root: Path = REPO_ROOT) -> list[str]:
    files = report["fingerprint"]["files"]
    normalized = report["fingerprint"].get("normalized") or {}
    snapshots = report.get("source_snapshots") or {}
    problems = [
        f"{path}: has a {what} but is not in the fingerprint"
        for what, table in (("snapshot", snapshots), ("normalised hash", normalized))
        for path in table
        if path not in files
    ]
    for path, digest in files.items():
        if path in snapshots:
            problems += _snapshot_problems(path, digest, snapshots[path], normalized, repo_root)
            continue
        live = resolve_report_path(path, repo_root)
        if not live.is_file():
            problems.append(f"{path}: the run executed it, but it is gone and has no snapshot")
            continue
        raw, now = file_hashes(live, path)
        if path not in normalized:
            if raw != digest:
                problems.append(
                    f"{path}: changed since the run (recorded sha256 {digest[:12]}, now "
                    f"{raw[:12]}) and no snapshot preserves the measured source; re-run, or "
                    "restore the file"
                )
        elif now != normalized[path]:
            problems.append(
                f"{path}: its recorded normalised hash {normalized[path][:12]} is not that of "
                f"the measured source ({now[:12]}); the report was altered"
                if raw == digest
                else f"{path}: changed since the run in more than comments and docstrings "
                f"(recorded normalised hash {normalized[path][:12]}, now {now[:12]}) and no "
                "snapshot preserves the measured source; re-run, or restore the file"
            )
    return problems


def _snapshot_problems(
    path: str, digest: str, snapshot: str, normalized: dict, repo_root: Path
) -> list[str]:
    """A snapshot holds exactly the measured bytes (its sha256), whatever the live file is."""
    copy = (repo_root / snapshot).resolve()
    if not copy.is_relative_to((repo_root / "results" / "snapshots").resolve()):
        return [f"{path}: its snapshot {snapshot} is outside results/snapshots/"]
    if not copy.is_file():
        return [f"{path}: its snapshot {snapshot} is missing"]
    raw, now = file_hashes(copy, path)
    if raw != digest:
        return [
            f"{path}: its snapshot {snapshot} does not hold the measured source "
            f"(recorded sha256 {digest[:12]}, snapshot {raw[:12]})"
        ]
    if path in normalized and now != normalized[path]:
        return [
            f"{path}: its recorded normalised hash {normalized[path][:12]} is not that of its "
            f"snapshot {snapshot} ({now[:12]}); the report was altered"
        ]
    return []


def _variant_problems(
    case: dict, variant: dict, eager: dict | None, expected_samples, judged: bool = False
) -> list:
    where = f"{case['op']} {'x'.join(map(str, case['shape']))} {case['dtype']} {variant['name']}"
    samples = variant["samples_ms"]
    status = variant["status"]
    if status != "timed":
        carries = variant.get("paired_vs_eager") or variant.get("paired_vs")
        if samples or variant["median_ms"] is not None or carries:
            return [f"{where}: status {status} but it carries timings"]
        if status == "failed" and variant["correctness"]["passed"] is not False:
            return [f"{where}: status failed but its correctness record passed"]
        return []
    problems = []
    if variant["correctness"]["passed"] is not True:
        problems.append(f"{where}: timed without passing the oracle")
    if not samples:
        return [*problems, f"{where}: timed but has no samples"]
    if expected_samples is not None and len(samples) != expected_samples:
        problems.append(f"{where}: {len(samples)} samples; settings say {expected_samples}")
    median = statistics.median(samples)
    for key, derived in (("median_ms", median), ("min_ms", min(samples)), ("max_ms", max(samples))):
        if not _close(variant[key], derived):
            problems.append(
                f"{where}: {key} {variant[key]} does not follow from samples_ms ({derived})"
            )
    recorded_median = variant["median_ms"]
    if not isinstance(recorded_median, int | float):
        return problems
    positive = recorded_median > 0
    gbps = case["logical_bytes"] / (recorded_median * 1e6) if positive else None
    if not _close(variant["logical_gbps"], gbps):
        problems.append(
            f"{where}: logical_gbps {variant['logical_gbps']} is not bytes/median ({gbps})"
        )
    tflops = case["flops"] / (recorded_median * 1e9) if positive and case["flops"] else None
    if not _close(variant["tflops"], tflops):
        problems.append(f"{where}: tflops {variant['tflops']} is not flops/median ({tflops})")
    ratio = None
    if eager is not None and eager["status"] == "timed" and positive:
        eager_median = eager["median_ms"]
        ratio = eager_median / recorded_median if isinstance(eager_median, int | float) else None
    if not _close(variant["ratio_vs_eager"], ratio):
        problems.append(
            f"{where}: ratio_vs_eager {variant['ratio_vs_eager']} is not the eager median over "
            f"this median ({ratio})"
        )
    if "paired_vs_eager" in variant and not judged:  # absent from reports made before it
        problems += _paired_problems(where, case, variant, eager)
    return problems


def _same(recorded, derived) -> bool:
    """Equal, numbers within _close, through nested dicts and lists."""
    if isinstance(derived, dict):
        return (
            isinstance(recorded, dict)
            and recorded.keys() == derived.keys()
            and all(_same(recorded[key], derived[key]) for key in derived)
        )
    if isinstance(derived, list):
        return (isinstance(recorded, list) and len(recorded) == len(derived)
                and all(_same(r, d) for r, d in zip(recorded, derived, strict=True)))  # fmt: skip
    if isinstance(derived, bool) or derived is None or isinstance(derived, str):
        return recorded == derived and type(recorded) is type(derived)
    return (
        isinstance(recorded, int | float)
        and not isinstance(recorded, bool)
        and _close(recorded, derived)
    )


def _verdict_problems(case: dict, settings: dict, reference_mhz) -> list[str]:
    """Throttled rounds, intervals and verdicts, convergence: each as the samples give it."""
    label = f"{case['op']} {'x'.join(map(str, case['shape']))} {case['dtype']}"
    problems = []
    telemetry = case.get("telemetry")
    if telemetry is not None:
        flagged = telemetry_rule.flagged_rounds(telemetry["rounds"], reference_mhz)
        if telemetry["flagged"] != flagged:
            problems.append(
                f"{label}: telemetry flags rounds {telemetry['flagged']}, its readings flag "
                f"{flagged}"
            )
            return problems  # every verdict below depends on the rounds left out
    derived = verdicts(case, settings)
    for variant in case["variants"]:
        for key, value in derived[variant["name"]].items():
            if not _same(variant.get(key, "absent"), value):
                problems.append(
                    f"{label} {variant['name']}: {key} {variant.get(key, 'absent')} does not "
                    f"follow from the samples round by round ({value})"
                )
        if "paired_vs" in variant and "paired_vs" not in derived[variant["name"]]:
            problems.append(f"{label} {variant['name']}: paired_vs on a baseline")
    if settings.get("max_noise") is not None:
        sampling = case.get("sampling")
        if sampling is None:
            problems.append(f"{label}: a --max-noise run without its sampling record")
        else:
            timed = [v for v in case["variants"] if v["status"] == "timed"]
            noise = {v["name"]: relative_spread(v["samples_ms"]) for v in timed}
            if not _same(sampling["noise_pct"], noise):
                problems.append(f"{label}: sampling noise_pct does not follow from the samples")
            elif sampling["converged"] != converged(case, settings, noise):
                problems.append(
                    f"{label}: sampling says converged {sampling['converged']}, its samples "
                    "say otherwise"
                )
    return problems


def _paired_problems(where: str, case: dict, variant: dict, eager: dict | None) -> list[str]:
    """``paired_vs_eager`` against the pairing of this variant's and eager's samples."""
    recorded, derived = variant["paired_vs_eager"], None
    if eager is not None and eager["status"] == "timed" and variant is not eager:
        derived = paired(variant, eager)
    if recorded is None or derived is None:
        agree = recorded is None and derived is None
    else:
        agree = all(_close(recorded[key], derived[key]) for key in derived)
    if agree:
        return []
    return [
        f"{where}: paired_vs_eager {recorded} does not follow from its and eager's samples "
        f"round by round ({derived})"
    ]


def consistency_problems(report: dict) -> list[str]:
    settings = report["settings"]
    adaptive = settings.get("max_noise") is not None  # --max-noise: as many as it took
    expected_samples = settings["samples"] if report["complete"] and not adaptive else None
    judged = "margin" in settings  # a report that records intervals and verdicts
    reference_mhz = telemetry_rule.reference_clock(report["cases"]) if judged else None
    problems, seen = [], set()
    for case in report["cases"]:
        key = (case["op"], tuple(case["shape"]), case["dtype"])
        if key in seen:
            problems.append(f"{case_label(case)}: the case appears twice")
            continue
        seen.add(key)
        variants = {v["name"]: v for v in case["variants"]}
        eager = variants.get(case["eager_variant"])
        if eager is None:
            problems.append(f"{case['op']}: eager variant {case['eager_variant']!r} is missing")
            continue
        if len(variants) != len(case["variants"]):
            problems.append(f"{case['op']}: two variants share a name")
            continue
        for variant in case["variants"]:
            problems += _variant_problems(case, variant, eager, expected_samples, judged)
            few = adaptive and report["complete"] and variant["status"] == "timed"
            if few and len(variant["samples_ms"]) < settings["samples"]:
                problems.append(f"{case['op']} {variant['name']}: fewer samples than --samples")
        if judged:
            problems += _verdict_problems(case, settings, reference_mhz)
        flush = case.get("flush_ms")
        if flush and flush["samples_ms"]:
            if not _close(flush["median_ms"], statistics.median(flush["samples_ms"])):
                problems.append(f"{case['op']}: flush_ms median does not follow from its samples")
    return problems


def record_schema_problems(record: dict) -> list[str]:
    """A script record (``learning.report.records``) against its own small schema."""
    from learning.report.records import RECORD_SCHEMA_PATH, RECORD_VERSION

    if record.get("record_version") != RECORD_VERSION:
        version = record.get("record_version")
        return [f"unsupported record_version {version!r}; this validator reads {RECORD_VERSION}"]
    return [
        f"schema: {'/'.join(str(p) for p in error.absolute_path) or '(top level)'}: {error.message}"
        for error in _validator(RECORD_SCHEMA_PATH).iter_errors(record)
    ]


def validate(report: object, repo_root: Path = REPO_ROOT) -> list[str]:
    """Every problem with ``report`` (a loaded JSON object), one line each; [] when valid.

    A benchmark report (schema version 2) is checked for schema, fingerprints and figures; a
    script record (``"record": "script-output"``) for its envelope and fingerprints (its data is
    the script's own and has no figures to recompute).
    """
    from learning.report.records import is_record

    problems = structure_problems(report)
    if problems:
        return problems
    if is_record(report):
        problems = record_schema_problems(report)
        return problems or fingerprint_problems(report, repo_root)
    problems = schema_problems(report)
    if problems:
        return problems
    return (
        fingerprint_problems(report, repo_root)
        + incomplete(report, repo_root)
        + consistency_problems(report)
    )


def validate_file(path: Path, repo_root: Path = REPO_ROOT) -> list[str]:
    """:func:`validate` of the report in the file at ``path`` (:func:`read_report`)."""
    try:
        report = _read_json(path)  # validate asks structure_problems
    except UnreadableReport as error:
        return [str(error)]
    return validate(report, repo_root)
