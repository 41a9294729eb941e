"""Does a learner's report describe the code the learner submitted, on a real machine?

:func:`validate_report` answers for one report, in this order (a report that fails the schema
is not read further):

1. the JSON Schema of its version, through :func:`learning.report.schema_problems` (an unknown
   ``schema_version`` is rejected);
2. what it claims: a learner run (``impl: learner``) that measured the learner's kernel, a
   finished run, settings that agree with the device, the environment a reader needs (GPU,
   L2, driver, CUDA, Triton, utilization before and after);
3. its fingerprint, file by file:

   * the learner's files (``exercises/``, ``journals/``) must be the SUBMITTED files, byte for
     byte; a snapshot does not excuse them, since the submission is what is graded;
   * every other file that binds a case (its closure: the measurement core and the learner
     path, the op's definition, the reference kernels; :mod:`learning.report.binding`) must be
     the release's, or a snapshot under the release's ``results/snapshots/`` with the
     recorded hash (:func:`learning.report.fingerprint_problems` against the release); the
     other release files a run loaded (the command line, the table printer, the report
     package) are provenance, so fixing a message there mid-term untrusts no report;
   * a measured learner file that is another learner's submitted file is copying, and one
     that holds a reference solution kernel, copied, or most of a known answer of any version,
     measured the course's kernel (:mod:`learning.check.originality`,
     :mod:`learning.check.known_answers`);

   * the fingerprint must be complete: every engine file a run always loads (the top-level
     import closure of the release's ``learning.bench``, and the schema), the reference
     kernel's files, and every file of the SUBMITTED ``exercises/`` that the graded module
     could have executed (its static import closure, :mod:`learning.report.closure`); code
     those files load dynamically (``exec``, ``importlib``, ...) is a finding of its own;

4. the figures: :func:`learning.report.consistency_problems` (samples vs median/min/max, GB/s
   vs bytes and median, ratios vs eager, no timed variant without a passed oracle check);
5. the evidence the grader derives itself (:mod:`learning.grade.evidence`): the cases and
   variants the settings imply, the registry's bytes and FLOPs, correctness records, copied
   samples, and whether the learner's kernel was timed at all;
6. plausibility (:mod:`learning.grade.plausibility`), for review only.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from learning import ops
from learning.bench.config import selection_arguments
from learning.check import known_answers, originality
from learning.grade.evidence import evidence_findings
from learning.grade.findings import Finding
from learning.grade.hashing import HashCache
from learning.grade.loading import load_report
from learning.grade.plausibility import review_flags
from learning.grade.schema import report_schema_problems
from learning.manifest import Manifest
from learning.report import binding, consistency_problems, fingerprint_problems
from learning.report.binding import ENGINE_ENTRIES
from learning.report.closure import Closure, Sources, import_closure, module_level_closure

ENGINE_DATA = ("learning/schemas/report-v2.json",)  # read by every run, imported by none
LEARNER_PACKAGE = "exercises"
REFERENCE_PACKAGE = "reference"
SNAPSHOT_FOLDER = PurePosixPath("results/snapshots")
BUSY_GPU_PERCENT = 10.0  # utilization before the run above this: someone else was using it
_GPU_FIELDS = ("gpu_name", "sm_count", "l2_bytes", "driver", "cuda", "triton")


@dataclass
class Release:
    """The instructor's copy of the course: the engine and references reports must match."""

    root: Path
    manifest: Manifest
    hashes: HashCache = field(default_factory=HashCache)
    _closures: dict = field(default_factory=dict, repr=False)

    def digest(self, path: str) -> str | None:
        return self.hashes.digest(os.path.join(self.root, path))

    def engine_files(self) -> frozenset[str]:
        """The engine files every kernel-bench run of this release loads."""
        if "engine" not in self._closures:
            found = module_level_closure(self.root, ENGINE_ENTRIES, "learning")
            data = {path for path in ENGINE_DATA if (self.root / path).is_file()}
            self._closures["engine"] = frozenset(found | data)
        return self._closures["engine"]

    def reference_files(self, spec: ops.OpSpec) -> frozenset[str]:
        """The reference files a run of ``spec`` always loads (its kernel module's closure)."""
        key = ("reference", spec.module)
        if key not in self._closures:
            module = f"{REFERENCE_PACKAGE}.{spec.module}"
            found = module_level_closure(self.root, [module], REFERENCE_PACKAGE)
            self._closures[key] = frozenset(found)
        return self._closures[key]

    def reference_copies(
        self, file: Path, path: str, digest: str
    ) -> list[originality.Copy | known_answers.Match]:
        """The functions of a submitted learner file (``path``, with sha256 ``digest``) that
        are this release's solution kernels, copied (:mod:`learning.check.originality`), or
        that hold most of a known answer of any version (:mod:`learning.check.known_answers`;
        not the finished course code an exercise copy made before it was imported still
        holds: this flags a file, not a launch)."""
        if not path.endswith(".py"):
            return []
        key = ("copies", path, digest)
        if key not in self._closures:
            if "solutions" not in self._closures:
                self._closures["solutions"] = originality.solutions(self.root, self.manifest)
            try:
                source = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                source = ""
            exact = originality.copies({path: source}, self._closures["solutions"])
            found = {(copy.path, copy.name) for copy in exact}
            corpus = Path(self.root) / known_answers.CORPUS.relative_to(known_answers.ROOT)
            release = known_answers.answers(corpus if corpus.is_file() else known_answers.CORPUS)
            answers = [answer for answer in release if not answer.given]
            near = [match for match in known_answers.matches({path: source}, answers)
                    if (match.path, match.name) not in found]  # fmt: skip
            self._closures[key] = [*exact, *near]
        return self._closures[key]

    def binding_files(self, report: dict) -> frozenset[str]:
        """The release files whose change could move this report's figures or its gate's
        verdict: each case's closure (:mod:`learning.report.binding`), read from the release.
        A release file outside it (the command line, the checker's messages) is provenance:
        an instructor may edit it mid-term without making a learner's report untrusted."""
        settings = report["settings"]
        ops_run = tuple(dict.fromkeys(case["op"] for case in report["cases"]))
        key = ("binding", settings.get("impl"), settings.get("reference_package"),
               settings.get("learner_package"), ops_run)  # fmt: skip
        if key not in self._closures:
            sources = Sources(self.root)
            found: set[str] = set()
            for op in ops_run:
                found |= binding.op_closure(sources, settings, op).files
            self._closures[key] = frozenset(found)
        return self._closures[key]

    def learner_closure(self, submission: Submission, modules: tuple[str, ...]) -> Closure:
        """What ``modules`` of the SUBMITTED ``exercises/`` could have executed."""
        key = ("learner", submission.folder, modules)
        if key not in self._closures:
            self._closures[key] = import_closure(submission.folder, modules, LEARNER_PACKAGE)
        return self._closures[key]


@dataclass(frozen=True)
class Submission:
    """One learner's folder: ``exercises/`` (and ``journals/``) as submitted, ``reports/*.json``.

    A submission handed in as an archive (``alice.zip``) has ``archive`` set; its ``folder`` is
    where the grader unpacked it, and ``problems`` what unpacking found.
    """

    learner: str
    folder: Path
    archive: Path | None = None
    problems: tuple[Finding, ...] = ()

    def reports(self) -> list[Path]:
        return sorted((self.folder / "reports").glob("*.json"))


class ClassIndex:
    """Which learners submitted which version of each learner-owned file.

    Files still identical to the release (untouched stubs, helpers) are left out: every learner
    has those, and sharing them is not copying.
    """

    def __init__(self, release: Release, submissions: Iterable[Submission]):
        self._owners: dict[tuple[str, str], set[str]] = defaultdict(set)
        for submission in submissions:
            for path, digest in learner_files(submission, release).items():
                if digest != release.digest(path):
                    self._owners[(path, digest)].add(submission.learner)

    def owners(self, path: str, digest: str) -> set[str]:
        return self._owners.get((path, digest), set())


def learner_files(submission: Submission, release: Release) -> dict[str, str]:
    """``{path: sha256}`` of every file under the submission's learner-owned folders."""
    files: dict[str, str] = {}
    root = os.fspath(submission.folder)
    for folder in release.manifest.learner:
        top = os.path.join(root, folder)
        if not os.path.isdir(top):
            continue
        for directory, subdirectories, names in os.walk(top):
            subdirectories[:] = [d for d in subdirectories if d != "__pycache__"]
            for name in names:
                path = os.path.join(directory, name)
                digest = release.hashes.digest(path)
                if digest is not None:
                    files[os.path.relpath(path, root).replace(os.sep, "/")] = digest
    return files


__all__ = ["load_report"]  # re-exported: where the grader has always looked for it


def validate_report(
    report: object, submission: Submission, release: Release, index: ClassIndex
) -> list[Finding]:
    """Every finding about one report of ``submission``; [] when it is fully trusted."""
    problems = report_schema_problems(report)
    if problems:
        return [Finding("schema", problem) for problem in problems]
    assert isinstance(report, dict)
    return [
        *_claims(report),
        *_environment(report),
        *_fingerprint(report, submission, release, index),
        *_complete_fingerprint(report, submission, release),
        *(Finding("consistency", problem) for problem in consistency_problems(report)),
        *evidence_findings(report),
        *(Finding("plausibility", flag, review=True) for flag in review_flags(report)),
    ]


# --------------------------------------------------------------------------- what it claims


def _learner_module_path(op: str) -> str | None:
    spec = ops.OPS.get(op)
    return f"{LEARNER_PACKAGE}/{spec.module.replace('.', '/')}.py" if spec else None


def _claims(report: dict) -> list[Finding]:
    settings = report["settings"]
    findings = []
    if settings["impl"] == "reference":
        findings.append(
            Finding(
                "claims-reference",
                "the report measures impl: reference (the course's kernels), not the "
                "learner's; it cannot earn credit in a learner's folder",
            )
        )
    if not report["complete"]:
        findings.append(Finding("incomplete", "the run was interrupted (complete: false)"))
    timing, device = settings["timing"], settings["device"]
    if (device == "cpu") != (timing == "cpu-interpreter"):
        findings.append(
            Finding("settings", f"timing {timing!r} is impossible on device {device!r}")
        )
    gpu_fields = [name for name in ("gpu_name", "sm_count", "l2_bytes", "driver")
                  if report["environment"].get(name) is not None]  # fmt: skip
    if device == "cpu" and gpu_fields:
        findings.append(
            Finding(
                "settings",
                f"a CPU run does not read the GPU, but this one records {', '.join(gpu_fields)}",
            )
        )
    for key, package in (("learner_package", LEARNER_PACKAGE),
                         ("reference_package", REFERENCE_PACKAGE)):  # fmt: skip
        if settings.get(key) != package:
            findings.append(
                Finding(
                    "settings",
                    f"settings.{key} is {settings.get(key)!r}: kernel-bench measures "
                    f"{package}/, nothing else",
                )
            )
    if settings["impl"] == "learner":
        learner_cases = [
            case
            for case in report["cases"]
            if any(v["kind"] == "learner" for v in case["variants"])
        ]
        if not learner_cases:
            findings.append(Finding("settings", "impl: learner, but no case has a learner variant"))
        files = report["fingerprint"]["files"]
        for op in sorted({case["op"] for case in learner_cases}):
            module = _learner_module_path(op)
            if module is None:
                findings.append(Finding("settings", f"op {op!r} is not an op of this course"))
            elif module not in files:
                findings.append(
                    Finding(
                        "fingerprint-incomplete",
                        f"the learner's {op} kernel {module} was measured but not fingerprinted",
                    )
                )
    return findings


def _environment(report: dict) -> list[Finding]:
    environment = report["environment"]
    findings = []
    if environment.get("triton") is None:
        findings.append(Finding("environment", "no Triton version recorded"))
    if report["settings"]["device"] != "cuda":
        return findings
    missing = [name for name in _GPU_FIELDS if environment.get(name) is None]
    if missing:
        findings.append(Finding("environment", f"a GPU run without {', '.join(missing)}"))
    utilization = report["gpu_utilization_percent"]
    unread = [when for when in ("before", "after") if utilization.get(when) is None]
    if unread:
        reason = utilization.get("reason")
        message = f"GPU utilization {' and '.join(unread)} the run was not recorded"
        findings.append(
            Finding("environment", f"{message} ({reason})", review=True)
            if reason
            else Finding("environment", f"{message}, and no reason is given")
        )
    before = utilization.get("before")
    if isinstance(before, int | float) and before > BUSY_GPU_PERCENT:
        findings.append(
            Finding(
                "environment", f"the GPU was {before:g}% busy before the run started", review=True
            )
        )
    return findings


# --------------------------------------------------------------------------- fingerprint


def _outside(path: str) -> bool:
    """An absolute path, one that climbs (``..``) or one with a backslash: PurePosixPath's
    answer, in string operations (a class's reports ask it for every file they name)."""
    return path.startswith("/") or "\\" in path or ".." in path.split("/")


def _fingerprint(
    report: dict, submission: Submission, release: Release, index: ClassIndex
) -> list[Finding]:
    files: Mapping[str, str] = report["fingerprint"]["files"]
    snapshots: Mapping[str, str] = report["source_snapshots"]
    findings: list[Finding] = []
    release_files: dict[str, str] = {}
    binds = release.binding_files(report)
    for path, digest in files.items():
        if _outside(path):
            findings.append(
                Finding("outside-course", f"{path}: the run executed a file outside the course")
            )
        elif release.manifest.is_learners(path):
            findings += _learner_file(path, digest, submission, release, index)
        elif path in binds:
            release_files[path] = digest
    release_snapshots = {}
    for path, copy in snapshots.items():
        if path not in release_files:
            continue  # a learner file is checked against the submission, never a snapshot
        if _outside(copy) or not PurePosixPath(copy).is_relative_to(SNAPSHOT_FOLDER):
            findings.append(
                Finding("release-file", f"{path}: snapshot {copy} is outside {SNAPSHOT_FOLDER}")
            )
            release_files.pop(path)
        else:
            release_snapshots[path] = copy
    if _release_files_differ(release_files, release_snapshots, release):
        release_report = {
            "fingerprint": {"files": release_files},
            "source_snapshots": release_snapshots,
        }
        findings += [
            Finding("release-file", problem)
            for problem in fingerprint_problems(release_report, release.root)
        ]
    return findings


def _release_files_differ(
    files: dict[str, str], snapshots: dict[str, str], release: Release
) -> bool:
    """A cached look first: the full check (which re-reads every file) only when it can fail."""
    return any(
        release.digest(snapshots.get(path, path)) != digest for path, digest in files.items()
    )


def _learner_file(
    path: str, digest: str, submission: Submission, release: Release, index: ClassIndex
) -> list[Finding]:
    submitted = release.hashes.digest(submission.folder / path)
    findings = []
    if submitted is None:
        findings.append(
            Finding(
                "learner-file",
                f"{path}: the report measured it, but the submission has no such file",
            )
        )
    elif submitted != digest:
        findings.append(
            Finding(
                "learner-file",
                f"{path}: the submitted file is not the one the report measured "
                f"(measured sha256 {digest[:12]}, submitted {submitted[:12]})",
            )
        )
    if submitted == digest:
        findings += [
            Finding("reference-copy", f"{copy}: the kernel measured is the course's, not yours")
            for copy in release.reference_copies(submission.folder / path, path, digest)
        ]
    others = sorted(index.owners(path, digest) - {submission.learner})
    if others:
        findings.append(
            Finding(
                "copied",
                f"{path}: the measured file is the one learner(s) {', '.join(others)} submitted",
                review=submitted == digest,  # identical submissions: a question for a person
            )
        )
    return findings


def bench_command(report: dict, device: str = "cuda") -> str:
    """The ``kernel-bench`` command that measures the same cases again, on ``device``.

    What an instructor runs in a clone holding the learner's submitted ``exercises/`` to check
    a report's timings on their own GPU.
    """
    settings = report["settings"]
    words = ["kernel-bench", *selection_arguments(settings)]
    if settings["compile"]:
        words.append("--compile")
        if settings.get("compile_mode", "default") != "default":
            words += ["--compile-mode", settings["compile_mode"]]
    timing = settings.get("requested_timing") or settings["timing"]
    if timing in ("graph", "events"):
        words += ["--timing", timing]
    words += ["--cache", settings["cache"]]
    if settings["cache"] == "cold" and settings.get("flush"):
        words += ["--flush", settings["flush"]]
    if settings.get("clock_burst"):
        words += ["--clock-burst", settings["clock_burst"]]
    words += ["--samples", str(settings["samples"])]
    words += ["--visits", str(settings["visits"]), "--seed", str(settings["seed"])]
    words += ["--impl", settings["impl"], "--device", device, "--output", "rerun.json"]
    return " ".join(words)


# --------------------------------------------------------------------------- complete?


def _complete_fingerprint(report: dict, submission: Submission, release: Release) -> list[Finding]:
    """Does the fingerprint name every file the run must have executed?

    The engine's and the reference's files come from the release; the learner's from the
    submitted sources (their import closure), since those are the files being graded.
    """
    files: Mapping[str, str] = report["fingerprint"]["files"]
    specs = [ops.OPS[op] for op in dict.fromkeys(c["op"] for c in report["cases"]) if op in ops.OPS]
    findings = []
    engine = sorted(path for path in release.engine_files() if path not in files)
    if engine:
        findings.append(
            Finding(
                "fingerprint-incomplete",
                f"engine files every kernel-bench run loads are missing: {', '.join(engine)}",
            )
        )
    reference = sorted(
        {path for spec in specs for path in release.reference_files(spec)} - set(files)
    )
    if reference:
        findings.append(
            Finding(
                "fingerprint-incomplete",
                f"reference files the measured cases load are missing: {', '.join(reference)}",
            )
        )
    if report["settings"]["impl"] != "learner":
        return findings
    modules = tuple(sorted({f"{LEARNER_PACKAGE}.{spec.module}" for spec in specs}))
    closure = release.learner_closure(submission, modules)
    for path in sorted(closure.files - set(files)):
        findings.append(
            Finding(
                "fingerprint-incomplete",
                f"{path}: the graded kernel imports it (in the submitted files), but the "
                "fingerprint does not name it",
            )
        )
    for path in closure.unreadable:
        findings.append(
            Finding(
                "fingerprint-incomplete",
                f"{path}: not valid Python (or too large to read), so what it imports is unknown",
            )
        )
    for use in closure.dynamic:
        findings.append(
            Finding(
                "dynamic-code",
                f"{use}: code loaded dynamically: no fingerprint can cover it",
            )
        )
    return findings
