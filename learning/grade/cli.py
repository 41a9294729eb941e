"""``python -m learning.grade SUBMISSIONS_DIR --output grades.csv``: argument parsing only.

Every input is checked before any grading starts: a missing folder or an output that cannot be
written ends as one line on stderr, exit status 2, and nothing written. The work is
:func:`learning.grade.grade_submissions`; the files are written last, each all at once.

The seed the checks (and ``--retime``) used is written beside the CSV, in ``<output>.run.json``
(``grades.csv`` -> ``grades.run.json``), with the command line: ``--seed`` with that number
grades the same inputs again. Without ``--seed`` each run draws a secret one.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import secrets
import sys
import tempfile
from pathlib import Path

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
SEED_BOUND = 2**31


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
        "--seed",
        type=int,
        help="the instructor's seed for every check and re-timing (default: a fresh secret one, "
        "written to <output>.run.json)",
    )
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
    find_submissions(args.submissions)
    release = load_release(args.release)
    for name in args.exercises or ():
        if name not in release.manifest.exercises:
            choices = ", ".join(graded_exercises(release.manifest) or release.manifest.exercises)
            raise GradeInputError(f"unknown exercise {name!r}; for example {choices}")
    _check_output_file(args.output, "--output")
    _check_output_file(run_record_path(args.output), "--output's run record")
    if args.seed is not None and not 0 <= args.seed < SEED_BOUND:
        raise GradeInputError(f"--seed must be between 0 and {SEED_BOUND - 1}, got {args.seed}")
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
    seed = args.seed if args.seed is not None else secrets.randbelow(SEED_BOUND)
    try:
        check_arguments(args)
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
        "replay": f"{PROG} ... --seed {seed}",
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
        print(f"{grade.learner}: {grade.points:g}/{grade.max_points:g}{flags}")
    print(f"wrote {args.output} ({len(grades)} learners; seed {seed} in "
          f"{run_record_path(args.output)})")  # fmt: skip
    return 0
