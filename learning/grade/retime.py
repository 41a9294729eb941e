"""``--retime``: the instructor's own timing of each learner's kernel, compared with the report.

A report whose every figure was scaled by the same factor, or whose learner samples were
scaled and every derived figure recomputed, is internally consistent: no check of the file can
catch it. A second measurement can. For each learner, the grader makes a temporary copy of the
release with that learner's submitted ``exercises/`` in place (:func:`learning.grade.clone.
make_clone`), and runs, per report, ``kernel-bench --impl learner`` with the report's op,
shapes, dtype and timing settings, on this machine, each in a fresh process, with a seed
derived from the instructor's (:func:`bench_seed`): kernel-bench puts its seed on its command
line and hands it to the learner's process, so it must say nothing about the checks' seed.
Its own report then supplies the speed evidence:

* every learner case must pass the oracle check and be timed in the instructor's run
  (``retime`` fails otherwise: the submitted kernel does not do what the report says);
* the report's learner speed relative to the reference kernel (``triton`` median over
  ``learner`` median, which cancels the machine's speed) must not exceed the instructor's by
  more than :data:`TOLERANCE` (:data:`CPU_TOLERANCE` for the interpreter, whose few samples of
  a shared CPU swing by up to 2x between runs); on the same GPU model the learner's median
  itself must not be faster than the instructor's by more than that factor either;
* the instructor's run gets the plausibility flags of any report.

A report from another device than this machine's (a GPU report graded on a laptop) is not
re-timed, and says so for review. How long a class takes: docs/instructor.md.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from learning.bench.config import selection_arguments
from learning.check.remote import derive_seed
from learning.grade.clone import make_clone, run_bench
from learning.grade.findings import Finding
from learning.grade.loading import load_report
from learning.grade.plausibility import review_flags

if TYPE_CHECKING:
    from learning.grade.grades import ReportVerdict
    from learning.grade.reports import Release, Submission

TOLERANCE = 1.5  # claimed speed / measured speed above this fails, on a GPU
CPU_TOLERANCE = 3.0  # on the CPU interpreter


@dataclass(frozen=True)
class RetimeOptions:
    seed: int  # the instructor's; kernel-bench gets bench_seed(seed)
    device: str = "auto"  # auto, cpu or cuda: where this machine runs kernels
    timeout_s: float = 600.0  # per kernel-bench run
    keep: Path | None = None  # copy each of the instructor's reports to keep/<learner>/


def bench_seed(seed: int) -> int:
    """kernel-bench's seed (its inputs and every shuffle) for the instructor's ``seed``: a
    hash of it, which gives the seed back only to a search over every seed it could be (2**63
    for a drawn one, so a replay can derive it again while learner code cannot invert it)."""
    return derive_seed(seed, "retime")


def machine_device(requested: str) -> str:
    if requested != "auto":
        return requested
    from learning import runtime

    return runtime.default_device()


def bench_arguments(settings: dict, seed: int, device: str) -> list[str]:
    """The kernel-bench arguments (no ``--output``) that measure a report's cases again."""
    words = selection_arguments(settings)
    if settings["compile"]:
        words += ["--compile", "--compile-mode", settings.get("compile_mode", "default")]
    if device == "cuda":
        timing = settings.get("requested_timing") or settings["timing"]
        words += ["--timing", timing, "--cache", settings["cache"]]
        if settings["cache"] == "cold":
            words += ["--flush", settings.get("flush", "read")]
        words += ["--clock-burst", settings.get("clock_burst", "off")]
    words += ["--samples", str(settings["samples"]), "--visits", str(settings["visits"])]
    words += ["--seed", str(seed), "--impl", "learner", "--device", device]
    return words


def _key(case: dict) -> tuple:
    return (case["op"], tuple(case["shape"]), case["dtype"])


def _timed(case: dict, name: str) -> dict | None:
    return next(
        (v for v in case["variants"] if v["name"] == name and v["status"] == "timed"), None
    )


def compare(claimed: dict, measured: dict) -> list[Finding]:
    """The learner's report against the instructor's run of the same cases."""
    findings = []
    tolerance = TOLERANCE if claimed["settings"]["device"] == "cuda" else CPU_TOLERANCE
    same_gpu = (
        claimed["settings"]["device"] == "cuda"
        and claimed["environment"].get("gpu_name") == measured["environment"].get("gpu_name")
    )
    ours = {_key(case): case for case in measured["cases"]}
    for case in claimed["cases"]:
        label = f"{case['op']} {'x'.join(map(str, case['shape']))} {case['dtype']}"
        again = ours.get(_key(case))
        if again is None:
            findings.append(Finding("retime", f"{label}: the instructor's run has no such case"))
            continue
        learner_again = next((v for v in again["variants"] if v["kind"] == "learner"), None)
        if learner_again is None or learner_again["status"] != "timed":
            why = (learner_again or {}).get("reason") or "no learner variant"
            findings.append(
                Finding(
                    "retime",
                    f"{label}: on the instructor's run your kernel was not timed ({why})",
                )
            )
            continue
        learner = _timed(case, "learner")
        reference, reference_again = _timed(case, "triton"), _timed(again, "triton")
        if learner is None:
            continue  # not timed in the report: learner-untimed says so already
        if reference and reference_again:
            claimed_speed = reference["median_ms"] / learner["median_ms"]
            measured_speed = reference_again["median_ms"] / learner_again["median_ms"]
            if claimed_speed > measured_speed * tolerance:
                findings.append(
                    Finding(
                        "retime",
                        f"{label}: the report has your kernel at {claimed_speed:.2f}x the "
                        f"reference kernel's speed; the instructor's run measured "
                        f"{measured_speed:.2f}x (more than {tolerance:g}x apart)",
                    )
                )
        if same_gpu and learner["median_ms"] * tolerance < learner_again["median_ms"]:
            findings.append(
                Finding(
                    "retime",
                    f"{label}: the report has your kernel at {learner['median_ms']:.4g} ms; "
                    f"the instructor's run on the same GPU model measured "
                    f"{learner_again['median_ms']:.4g} ms",
                )
            )
    findings += [
        Finding("retime", f"the instructor's run: {flag}", review=True)
        for flag in review_flags(measured)
    ]
    return findings


def retime_reports(
    submission: Submission,
    verdicts: Sequence[ReportVerdict],
    release: Release,
    options: RetimeOptions,
) -> tuple[ReportVerdict, ...]:
    """``verdicts`` with each re-timed report's findings added (one clone per learner)."""
    device = machine_device(options.device)
    wanted = [v for v in verdicts if v.data is not None and v.data["settings"]["impl"] == "learner"]
    if not wanted:
        return tuple(verdicts)
    updated = {}
    with tempfile.TemporaryDirectory(prefix=f"learning-retime-{submission.learner[:20]}-") as tmp:
        clone = make_clone(Path(tmp) / "clone", release.root)
        shutil.rmtree(clone / "exercises", ignore_errors=True)
        if (submission.folder / "exercises").is_dir():
            shutil.copytree(
                submission.folder / "exercises",
                clone / "exercises",
                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
            )
        for number, verdict in enumerate(wanted):
            updated[verdict.path] = _retime_one(verdict, clone, Path(tmp), number, device, options,
                                                submission.learner)  # fmt: skip
    return tuple(
        replace(v, findings=v.findings + tuple(updated[v.path])) if v.path in updated else v
        for v in verdicts
    )


def _retime_one(
    verdict: ReportVerdict,
    clone: Path,
    scratch: Path,
    number: int,
    device: str,
    options: RetimeOptions,
    learner: str,
) -> list[Finding]:
    claimed = verdict.data
    settings = claimed["settings"]
    if settings["device"] != device:
        return [
            Finding(
                "retime",
                f"not re-timed: a {settings['device']} report, and this machine runs kernels "
                f"on {device}",
                review=True,
            )
        ]
    output = scratch / f"retime-{number}.json"
    arguments = bench_arguments(settings, bench_seed(options.seed), device)
    try:
        run_bench(clone, arguments, output, timeout_s=options.timeout_s)
    except RuntimeError as error:
        last = str(error).strip().splitlines()[-1][:300] if str(error).strip() else "no output"
        return [
            Finding(
                "retime",
                f"kernel-bench {' '.join(arguments)} failed on your submitted files: {last}",
            )
        ]
    measured, problems = load_report(output)
    if problems:
        return problems
    if options.keep is not None:
        folder = options.keep / learner
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(output, folder / Path(verdict.path).name)
    return compare(claimed, measured)
