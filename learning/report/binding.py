"""Which recorded files a case's figures depend on, and so whether a recorded case is fresh.

A report's fingerprint names every file its run loaded and keeps both hashes of each (its
snapshots keep the bytes): that is provenance, and it never expires. What a case's figures
depend on is less. Its *closure* is the set of files whose change could move its samples or
its gate verdict:

* **the measurement core**: the engine modules every run loads (the top-level import closure
  of ``learning.bench.cli`` and ``learning.bench.engine``: timers, schedule, gate,
  correctness, machine, the telemetry sampler, variants, runtime, how the samples are
  recorded), and for a learner run also the
  learner path (everything ``learning.bench.learner`` can import: the worker, the trace, the
  replay, the guards);
* **the op's definition**: ``learning/ops/<op>/__init__.py``, with the definitions and the spec
  type it imports (``softmax_train`` reads ``softmax``'s oracle and baselines); the other
  modules of the op's package hold what only the checker reads, and no run imports them;
* **the op's kernels**: every file of the implementation packages that the op's kernel module
  can import (``reference/kernels/softmax.py``, ``launch.py``, ``row_plan.py`` and the
  packages' ``__init__.py``), and for a learner run the learner's files too.

The :data:`INTERFACE` modules are recorded but never bind: the command line, the table
printer, the comparison, the op index, the settings' parsing (every setting is recorded), the
shape suite (it only chooses cases, each recorded by op, shape and dtype) and
the report package, whose derivations (figures, intervals, verdicts, throttle flags) the
validator computes again from the samples anyway. So adding an op, rewording a summary or a
``--help`` line, or fixing a message stales no recorded case; editing a kernel stales the
cases of the ops that import it, and editing a timer stales every case.

Two readers, one rule:

* :func:`stale_ops` asks whether a report still describes the code in a folder: each op's
  closure is read from the live files (a kernel that now imports a new helper binds it), and
  a file of it whose normalised hash differs from the recorded one, or that every run now
  loads and the fingerprint lacks, makes the op's cases stale. The freshness test,
  ``python -m learning.report stale`` and the grader use it.
* :func:`incomplete` asks whether a report's fingerprint holds its own closure: each op's
  closure is read from the report's *measured* sources (its snapshots, or the files while
  they still have the recorded hash), top-level imports only (what every run executed), and
  a file of it that the fingerprint lacks makes the report invalid, naming the file.

No torch here: an op's kernel module is read from its definition's source (the ``module=``
of its ``OpSpec``), so validating a report starts nothing heavy.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from learning.report.closure import Sources, closure
from learning.report.fingerprint import REPO_ROOT, file_hashes, measured_source

# What every run executes: the command line, which imports the engine only once the command
# line is accepted, and the engine itself (timers, schedule, gate, sampler, recording).
ENGINE_ENTRIES = ("learning.bench.cli", "learning.bench.engine")
LEARNER_ENTRY = "learning.bench.learner"  # what a learner run adds: worker, trace, replay
ENGINE_PACKAGE = "learning"
DEFINITIONS = "learning/ops/"  # learning/ops/<op>/__init__.py defines the op <op>
LEGACY_REGISTRY = "learning/ops.py"  # every op in one module, as reports before the split have
# Recorded, never binding (see the module docstring). A new engine module binds until it is
# named here, so forgetting to classify one can only make evidence stale, never falsely fresh.
INTERFACE = frozenset(
    {
        "learning/bench/__init__.py",
        "learning/bench/__main__.py",
        "learning/bench/cli.py",
        "learning/bench/compare.py",
        "learning/bench/config.py",
        "learning/bench/entry.py",
        "learning/bench/output.py",
        "learning/bench/suite.py",
        "learning/check/__init__.py",
        "learning/ops/__init__.py",
    }
)
INTERFACE_FOLDERS = ("learning/report/", "learning/schemas/")


def is_interface(path: str) -> bool:
    return path in INTERFACE or path.startswith(INTERFACE_FOLDERS)


def definition_paths(op: str) -> tuple[str, str]:
    """Where the op ``op`` may be defined: its own package (whose other modules, the
    checker's data, no run imports) or, as first written, a module."""
    return f"{DEFINITIONS}{op}/__init__.py", f"{DEFINITIONS}{op}.py"


def kernel_module(source: bytes | None, op: str) -> str | None:
    """The ``module="kernels.x"`` of the ``OpSpec(name=op, ...)`` call in a definition's source
    (a definition module, or the single registry of older reports); None if it has none."""
    if source is None:
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        words = {k.arg: k.value for k in node.keywords if k.arg}
        name, module = words.get("name"), words.get("module")
        named = isinstance(name, ast.Constant) and name.value == op
        if named and isinstance(module, ast.Constant) and isinstance(module.value, str):
            return module.value
    return None


@dataclass(frozen=True)
class Closure:
    """One op's closure in one report: the files, and what could not be resolved."""

    files: frozenset[str]
    unknown: str | None = None  # why the kernels could not be found (no definition, say)


def _packages(settings: dict) -> list[str]:
    packages = [settings.get("reference_package") or "reference"]
    if settings.get("impl") == "learner":
        packages.append(settings.get("learner_package") or "exercises")
    return packages


def _core(sources: Sources, learner: bool, strict: bool) -> set[str]:
    files = closure(sources, ENGINE_ENTRIES, [ENGINE_PACKAGE], strict=True).files
    if learner:
        files |= closure(sources, [LEARNER_ENTRY], [ENGINE_PACKAGE], strict=strict).files
    return {path for path in files if not is_interface(path)}


def _definition(sources: Sources, op: str, strict: bool) -> tuple[set[str], str | None]:
    """The op's definition files and the path its kernel module is read from."""
    if sources.exists(LEGACY_REGISTRY):  # a report from before the split: every op in one
        return {LEGACY_REGISTRY}, LEGACY_REGISTRY
    for own in definition_paths(op):
        if sources.exists(own):
            found = closure(sources, [f"learning.ops.{op}"], [ENGINE_PACKAGE], strict).files
            return {p for p in found if p.startswith(DEFINITIONS) and not is_interface(p)}, own
    return set(), None  # the op is defined nowhere (gone, or not a course tree): unknown


def op_closure(sources: Sources, settings: dict, op: str, strict: bool = False) -> Closure:
    """The files one op's cases depend on, read through ``sources``; ``strict``: only what
    every run executed (top-level imports), else whatever could have run."""
    learner = settings.get("impl") == "learner"
    files = _core(sources, learner, strict)
    definition, origin = _definition(sources, op, strict)
    files |= definition
    module = kernel_module(sources.read(origin), op) if origin else None
    if module is None:
        why = f"no definition of op {op!r} names its kernel module"
        return Closure(frozenset(files), unknown=why)
    packages = _packages(settings)
    kernels = closure(sources, [f"{p}.{module}" for p in packages], packages, strict=strict)
    return Closure(frozenset(files | kernels.files))


def report_ops(report: dict) -> list[str]:
    return list(dict.fromkeys(case["op"] for case in report.get("cases", ())))


# --------------------------------------------------------------------------- fresh?


@dataclass(frozen=True)
class Staleness:
    """Why one op's recorded cases no longer describe the code: one line per file."""

    op: str
    reasons: tuple[str, ...]


def _recorded(report: dict, path: str) -> tuple[str | None, str | None]:
    fingerprint = report["fingerprint"]
    return fingerprint["files"].get(path), (fingerprint.get("normalized") or {}).get(path)


def _changed(report: dict, path: str, root: Path, always: bool) -> str | None:
    raw_then, normalized_then = _recorded(report, path)
    live = root / path
    if raw_then is None:  # stale only if every run loads it: else the run may not have needed it
        return f"{path}: not in the fingerprint (every run now loads it)" if always else None
    if not live.is_file():
        return f"{path}: gone from the code"
    raw, normalized = file_hashes(live, path)
    same = normalized == normalized_then if normalized_then else raw == raw_then
    return None if same else f"{path}: changed since the run"


def stale_ops(report: dict, root: Path = REPO_ROOT) -> list[Staleness]:
    """Each op of ``report`` whose recorded cases no longer describe the code under ``root``,
    with the files that say so; [] when every case is fresh."""
    sources = Sources(root)
    stale = []
    for op in report_ops(report):
        found = op_closure(sources, report["settings"], op)
        always = op_closure(sources, report["settings"], op, strict=True).files
        reasons = [found.unknown] if found.unknown else []
        reasons += [
            why for path in sorted(found.files)
            if (why := _changed(report, path, root, path in always))
        ]  # fmt: skip
        if reasons:
            stale.append(Staleness(op, tuple(reasons)))
    return stale


def stale_cases(report: dict, root: Path = REPO_ROOT) -> list[tuple[dict, Staleness]]:
    """Each recorded case that no longer describes the code, with why."""
    by_op = {staleness.op: staleness for staleness in stale_ops(report, root)}
    return [(case, by_op[case["op"]]) for case in report["cases"] if case["op"] in by_op]


# --------------------------------------------------------------------------- complete?


class MeasuredSources(Sources):
    """A report's measured files: a file exists if the fingerprint names it (or the folder
    has it), and reads as its snapshot or its live bytes while they have the recorded hash."""

    def __init__(self, report: dict, root: Path):
        super().__init__(root)
        self.report = report
        self.files = report["fingerprint"]["files"]

    def exists(self, path: str) -> bool:
        return path in self.files or super().exists(path)

    def read(self, path: str) -> bytes | None:
        return measured_source(self.report, path, self.root) if path in self.files else None


def incomplete(report: dict, root: Path = REPO_ROOT) -> list[str]:
    """One line per file that a case's closure needs and the fingerprint lacks."""
    if "cases" not in report or "settings" not in report:
        return []  # a script record: its own files, nothing per case
    sources = MeasuredSources(report, root)
    missing: dict[str, list[str]] = {}
    for op in report_ops(report):
        found = op_closure(sources, report["settings"], op, strict=True)
        for path in found.files - set(sources.files):
            missing.setdefault(path, []).append(op)
    return [
        f"{path}: the {', '.join(ops)} cases' code loads it, but the fingerprint lacks it"
        for path, ops in sorted(missing.items())
    ]


def closure_of(reports: Iterable[dict], root: Path = REPO_ROOT) -> set[str]:
    """Every file that binds some case of these reports (live closures)."""
    sources = Sources(root)
    files: set[str] = set()
    for report in reports:
        for op in report_ops(report):
            files |= op_closure(sources, report["settings"], op).files
    return files
