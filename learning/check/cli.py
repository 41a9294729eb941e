"""``python -m learning.check <exercise> [--reference] [--json]``: parse, call the runner, print.

Without an exercise it lists them on stdout, one line each with its lesson and what it is (the
lesson's title from the manifest, or for a kernel exercise the registry's summaries of the ops
it grades), and exits 0; ``--json`` gives the list as JSON.

Exit status: 0 when every check passes (or the list was asked for), 1 when some fail, 2 for a
usage error, such as an unknown exercise (one line on stderr, with the closest name when one
is close), 3 when the exercise is not graded because the checker itself failed twice (an
incomplete report: a fault to report, not a mark). The work is
:func:`learning.check.runner.check_exercise`.

A check that measured something on each input (a kernel exercise's memory traffic) prints its
message even when it passes; ``--json`` carries the measurements as the check's ``cases``.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import textwrap
from collections import Counter
from collections.abc import Sequence

from learning import manifest as manifest_module
from learning.check import passes
from learning.check.runner import ExerciseReport, UnknownExercise, check_exercise
from learning.check.seeds import replay_seed

EXIT_PASSED, EXIT_FAILED, EXIT_USAGE, EXIT_INCOMPLETE = 0, 1, 2, 3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m learning.check",
        description="Grade one exercise: your files under exercises/ (or, with --reference, "
        "the course's reference/).",
    )
    parser.add_argument("exercise", nargs="?", help="the exercise to check, e.g. measurement")
    parser.add_argument(
        "--reference", action="store_true", help="check reference/ instead of exercises/"
    )
    parser.add_argument(
        "--impl",
        metavar="PACKAGE",
        help="check any importable package laid out like exercises/ (on PYTHONPATH)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)

    manifest = manifest_module.load()
    if args.exercise is None:
        exercises = catalogue(manifest)
        print(json.dumps(exercises, indent=2) if args.json else _exercise_list(exercises))
        return EXIT_PASSED
    if args.exercise not in manifest.exercises:
        print(_unknown(args.exercise, list(manifest.exercises)), file=sys.stderr)
        return EXIT_USAGE
    if args.reference and args.impl:
        parser.error("give --reference or --impl, not both")
    impl = "reference" if args.reference else (args.impl or "exercises")
    if not impl.isidentifier():
        parser.error(f"--impl takes a package name, got {impl!r}")

    try:
        replay_seed()  # a bad LEARNING_CHECK_SEED is a usage error, before anything runs
    except ValueError as error:
        print(f"python -m learning.check: {error}", file=sys.stderr)
        return EXIT_USAGE
    mine = impl == "exercises" and args.exercise in manifest.exercises
    before = passes.digests(args.exercise) if mine else {}  # the files as they are checked
    try:
        report = check_exercise(args.exercise, impl, manifest=manifest)
    except UnknownExercise as error:
        print(_unknown(error.name, error.choices), file=sys.stderr)
        return EXIT_USAGE
    if mine and not report.incomplete:  # the lessons' "After you pass" cells read it (passes.py)
        passes.note(args.exercise, report.passed, report.points, report.max_points, before)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        print(render(report))
    if report.incomplete:
        return EXIT_INCOMPLETE
    return EXIT_PASSED if report.passed else EXIT_FAILED


def catalogue(manifest: manifest_module.Manifest) -> list[dict]:
    """Each exercise: its name, lesson number, a one-line description and the learner's files."""
    from learning import ops  # the op registry, for the kernel exercises' summaries

    kernels = ops.exercises()
    rows = []
    for name, exercise in manifest.exercises.items():
        lesson = manifest.lesson_of(name)
        if name in kernels:
            description = "; ".join(spec.summary for spec in kernels[name])
        else:
            description = lesson.title if lesson else "its lesson is not written yet"
        rows.append({
            "name": name,
            "lesson": lesson.number if lesson else None,
            "description": description,
            "files": list(exercise.editable),
        })
    return rows


def _exercise_list(exercises: list[dict]) -> str:
    width = max(len(row["name"]) for row in exercises) + 2
    lines = ["exercises (check one with `python -m learning.check NAME [--reference] [--json]`):"]
    for row in exercises:
        lesson = f"lesson {row['lesson']:02d}" if row["lesson"] is not None else "no lesson"
        lines.append(f"  {row['name']:<{width}}{lesson}  {row['description']}")
    return "\n".join(lines)


def _unknown(name: str, choices: Sequence[str]) -> str:
    """One line: the unknown name, the closest exercise when one is close, where the list is."""
    close = difflib.get_close_matches(name, choices, n=1)
    guess = f"; did you mean {close[0]!r}?" if close else ""
    return (
        f"python -m learning.check: unknown exercise {name!r}{guess} "
        "(`python -m learning.check` lists the exercises)"
    )


def render(report: ExerciseReport) -> str:
    """The report as the learner reads it: PASS/FAIL per check, messages indented, then points.
    Failed checks that share one message (every check "not run" behind the first failure, say)
    are printed once, after the others, as one line naming them all."""
    lines = [f"Checking {report.exercise} against {report.impl}/"]
    failed = [check for check in report.checks if not check.passed and check.message]
    shared = [m for m, count in Counter(c.message for c in failed).items() if count > 1]
    for check in report.checks:
        if not check.passed and check.message in shared:
            continue
        points = f"{check.earned:g}/{check.max_points:g}" if check.max_points else "no points"
        lines.append(f"{'PASS' if check.passed else 'FAIL'}  {check.name} ({points})")
        if check.message and (not check.passed or check.cases):  # and what it measured
            lines.extend(f"      {line}" for line in check.message.splitlines())
    for message in shared:
        group = [check for check in failed if check.message == message]
        earned, possible = sum(c.earned for c in group), sum(c.max_points for c in group)
        points = f"{earned:g}/{possible:g}" if possible else "no points"
        names = ", ".join(check.name for check in group)
        lines.extend(textwrap.wrap(f"FAIL  {len(group)} checks ({points}): {names}", width=100,
                                   subsequent_indent="      "))  # fmt: skip
        lines.extend(f"      {line}" for line in message.splitlines())
    journal = report.journal
    if journal is not None:
        lines.append(f"journal {journal.path}: {journal.summary()} (no points)")
    if report.incomplete:
        lines.append(f"{report.exercise}: not graded (incomplete: the checker failed twice, "
                     "see above)")  # fmt: skip
    else:
        lines.append(f"{report.exercise}: {report.points:g}/{report.max_points:g} points")
    return "\n".join(lines)
