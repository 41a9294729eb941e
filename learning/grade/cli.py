"""``python -m learning.grade SUBMISSIONS_DIR --output grades.csv``: argument parsing only.

Every input is checked before any grading starts: a missing folder or an output that cannot be
written ends as one line on stderr, exit status 2, and nothing written. The work is
:func:`learning.grade.grade_submissions`; the files are written last, each all at once. A
learner whose grade is incomplete (an exercise's check module failed twice, a fault of the
checker) is marked so in the CSV, left out of the gradebook, named on stderr, and makes the
exit status 3: grade again.

The seed the checks (and ``--retime``) used is written beside the CSV, in ``<output>.run.json``
(``grades.csv`` -> ``grades.run.json``), once every learner's code has run: ``--seed-stdin <
grades.run.json`` grades the same inputs again. Without it each run draws a secret one.

The seed decides the hidden inputs, so learner code must never read it. It is never on the
command line (``/proc/PID/cmdline`` is readable by every process on the machine) or in the
environment: ``--seed N`` is refused, and ``--seed-stdin`` reads it before any grading, then
puts ``/dev/null`` where stdin was. The process is marked not dumpable first, so the learners'
processes (its descendants, of the same user) cannot read its memory or open files through
``/proc`` (:func:`learning.check.integrity.hidden`).
"""

from __future__ import annotations

import argparse
import datetime
import getpass
import json
import os
import secrets
import sys
import tempfile
from pathlib import Path

from learning.check import integrity
from learning.grade.grades import (
    GradeInputError,
    find_submissions,
    grade_submissions,
    graded_exercises,
    load_release,
)
from learning.grade.output import write_atomic_text, write_csv, write_feedback, write_gradebook
from learning.grade.retime import RetimeOptions

PROG = "python -m learning.grade"
EXIT_INCOMPLETE = 3  # some learner's grade is incomplete: the CSV says which
SEED_BOUND = 2**63  # a drawn seed: too many to try each against a seed derived from it


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Grade a class: re-run each learner's exercise checks on the submitted files "
        "and validate every report (schema, fingerprints against the submission and the release, "
        "figures, environment, copying, plausibility).",
        epilog="SUBMISSIONS_DIR/<learner>/ holds the learner's exercises/ and reports/*.json. "
        "Columns of the CSV and every flag: docs/instructor.md.",
    )
    parser.add_argument("submissions", type=Path, metavar="SUBMISSIONS_DIR")
    parser.add_argument("--output", type=Path, required=True, help="the CSV to write")
    parser.add_argument(
        "--release", type=Path, help="the instructor's course release (default: this checkout)"
    )
    parser.add_argument("--feedback-dir", type=Path, help="write <learner>.md feedback here")
    parser.add_argument(
        "--gradebook", type=Path, help="an nbgrader gradebook.db to record grades in"
    )
    parser.add_argument(
        "--exercise",
        action="append",
        dest="exercises",
        metavar="NAME",
        help="grade this exercise (repeat for more; default: the manifest's lessons' exercises)",
    )
    parser.add_argument(
        "--seed-stdin",
        action="store_true",
        help="read the instructor's seed for every check and re-timing from stdin: a whole "
        "number, or an earlier run's <output>.run.json (default: a fresh secret one, written "
        "to <output>.run.json). Never on the command line: every process can read that",
    )
    parser.add_argument("--seed", metavar="N", help=argparse.SUPPRESS)  # refused, with why
    parser.add_argument(
        "--retime",
        action="store_true",
        help="re-run each learner report's cases with kernel-bench --impl learner on this "
        "machine, in a copy of the release holding the learner's exercises/, and compare",
    )
    parser.add_argument(
        "--retime-device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="where --retime runs kernels (default: a GPU when there is one)",
    )
    parser.add_argument(
        "--retime-timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="the longest one --retime run of kernel-bench may take (default 600)",
    )
    parser.add_argument(
        "--retime-dir", type=Path, help="keep the instructor's re-timed reports here"
    )
    return parser


def read_seed(stream) -> int:
    """The seed on ``stream``: a whole number below :data:`SEED_BOUND`, or a run record (JSON
    with a ``seed``). At a terminal it is asked for and not echoed. When ``stream`` is this
    process's stdin, ``/dev/null`` takes its place: a file or pipe it came from is no longer
    open here for anyone to read through ``/proc``."""
    try:
        text = getpass.getpass("seed: ") if stream.isatty() else stream.read(1 << 20)
    finally:
        _forget(stream)
    text = text.strip()
    value = text
    if text.startswith("{"):
        try:
            value = json.loads(text).get("seed")
        except (ValueError, AttributeError):
            raise GradeInputError("--seed-stdin: stdin holds no readable run record") from None
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < SEED_BOUND:
        raise GradeInputError(
            f"--seed-stdin: stdin must hold a whole number below 2**63 or a run record; "
            f"got {len(text)} characters that are neither"
        )
    return value


def _forget(stream) -> None:
    try:
        if stream.fileno() != 0:
            return
    except (OSError, ValueError):  # not a file (a test's StringIO)
        return
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)


def run_record_path(output: Path) -> Path:
    """Where the seed and command of a grading run are written: beside the CSV."""
    return output.with_name(f"{output.stem}.run.json")


def _probe_writable(folder: Path, what: str) -> None:
    """Fail now, not after grading, when ``folder`` cannot take a new file."""
    if not folder.is_dir():
        raise GradeInputError(f"{what}: folder {folder} does not exist")
    try:
        handle, probe = tempfile.mkstemp(prefix=".learning-grade-", dir=folder)
    except OSError as error:
        raise GradeInputError(f"{what}: cannot write in {folder} ({error.strerror})") from None
    os.close(handle)
    os.unlink(probe)


def _check_output_file(path: Path, what: str) -> None:
    if path.is_dir():
        raise GradeInputError(f"{what}: {path} is a folder, not a file")
    if path.exists() and not os.access(path, os.W_OK):
        raise GradeInputError(f"{what}: {path} is not writable")
    _probe_writable(path.parent if str(path.parent) else Path("."), what)


def check_arguments(args: argparse.Namespace) -> None:
    if args.seed is not None:
        raise GradeInputError(
            "--seed N is refused: a command line can be read by every process on this machine "
            "(/proc/PID/cmdline), the learners' code among them, and the seed decides the "
            "checks' hidden inputs. Give it on stdin: --seed-stdin < grades.run.json (or a file "
            "holding the number)"
        )
    find_submissions(args.submissions)
    release = load_release(args.release)
    for name in args.exercises or ():
        if name not in release.manifest.exercises:
            choices = ", ".join(graded_exercises(release.manifest) or release.manifest.exercises)
            raise GradeInputError(f"unknown exercise {name!r}; for example {choices}")
    _check_output_file(args.output, "--output")
    _check_output_file(run_record_path(args.output), "--output's run record")
    if args.retime_timeout <= 0:
        raise GradeInputError(f"--retime-timeout must be positive, got {args.retime_timeout:g}")
    if args.retime_dir is not None:
        if not args.retime:
            raise GradeInputError("--retime-dir needs --retime")
        if args.retime_dir.exists() and not args.retime_dir.is_dir():
            raise GradeInputError(f"--retime-dir: {args.retime_dir} is a file, not a folder")
        existing = args.retime_dir if args.retime_dir.is_dir() else args.retime_dir.parent
        _probe_writable(existing, "--retime-dir")
    if args.retime and args.retime_device == "cuda":
        from learning import runtime

        if runtime.default_device() != "cuda":
            raise GradeInputError("--retime-device cuda: no CUDA GPU on this machine")
    if args.feedback_dir is not None:
        if args.feedback_dir.exists() and not args.feedback_dir.is_dir():
            raise GradeInputError(f"--feedback-dir: {args.feedback_dir} is a file, not a folder")
        existing = args.feedback_dir if args.feedback_dir.is_dir() else args.feedback_dir.parent
        _probe_writable(existing, "--feedback-dir")
    if args.gradebook is not None:
        _check_output_file(args.gradebook, "--gradebook")
        try:
            import nbgrader.api  # noqa: F401
        except ImportError:
            raise GradeInputError(
                "--gradebook needs nbgrader (pip install -e '.[course]')"
            ) from None


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    with integrity.hidden():  # before the seed is read: see the module docstring
        return _grade(args, argv)


def _grade(args: argparse.Namespace, argv: list[str] | None) -> int:
    try:
        check_arguments(args)
        seed = read_seed(sys.stdin) if args.seed_stdin else secrets.randbelow(SEED_BOUND)
        retime = None
        if args.retime:
            retime = RetimeOptions(
                seed=seed,
                device=args.retime_device,
                timeout_s=args.retime_timeout,
                keep=args.retime_dir,
            )
        grades = grade_submissions(
            args.submissions,
            release_root=args.release,
            exercises=args.exercises,
            progress=lambda line: print(f"learning.grade: {line}", file=sys.stderr, flush=True),
            seed=seed,
            retime=retime,
        )
    except GradeInputError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    write_csv(grades, args.output)
    record = {
        "seed": seed,
        "command": [PROG, *(sys.argv[1:] if argv is None else argv)],
        "replay": f"{PROG} ... --seed-stdin < {run_record_path(args.output).name}",
        "graded_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "learners": len(grades),
    }
    write_atomic_text(run_record_path(args.output), json.dumps(record, indent=1) + "\n")
    if args.feedback_dir is not None:
        write_feedback(grades, args.feedback_dir)
    if args.gradebook is not None:
        write_gradebook(grades, args.gradebook)
    for grade in grades:
        flags = "  (needs review)" if grade.review_flags() else ""
        if grade.incomplete:
            flags += f"  (incomplete: {', '.join(grade.incomplete)} not graded)"
        print(f"{grade.learner}: {grade.points:g}/{grade.max_points:g}{flags}")
    print(f"wrote {args.output} ({len(grades)} learners; seed {seed} in "
          f"{run_record_path(args.output)})")  # fmt: skip
    incomplete = [grade for grade in grades if grade.incomplete]
    for grade in incomplete:
        print(f"{PROG}: incomplete: {grade.learner}: the checker failed twice on "
              f"{', '.join(grade.incomplete)} (a fault of the checks, not of the submission; "
              "not in the gradebook): grade again", file=sys.stderr)  # fmt: skip
    return EXIT_INCOMPLETE if incomplete else 0
