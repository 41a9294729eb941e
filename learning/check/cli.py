"""``python -m learning.check <exercise> [--reference] [--json]``: parse, call the runner, print.

Exit status: 0 when every check passes, 1 when some fail, 2 for a usage error (no exercise, an
unknown one). The work is :func:`learning.check.runner.check_exercise`.
"""

from __future__ import annotations

import argparse
import json
import sys

from learning import manifest as manifest_module
from learning.check.runner import ExerciseReport, check_exercise
from learning.check.seeds import replay_seed

EXIT_PASSED, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


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
    if args.exercise not in manifest.exercises:
        if args.exercise is not None:
            print(f"unknown exercise {args.exercise!r}", file=sys.stderr)
        print(_exercise_list(manifest), file=sys.stderr)
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
    report = check_exercise(args.exercise, impl, manifest=manifest)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        print(render(report))
    return EXIT_PASSED if report.passed else EXIT_FAILED


def _exercise_list(manifest: manifest_module.Manifest) -> str:
    lines = ["usage: python -m learning.check EXERCISE [--reference] [--json]", "exercises:"]
    for name in manifest.exercises:
        lesson = manifest.lesson_of(name)
        where = f"lesson {lesson.number}: {lesson.title}" if lesson else "lesson not written yet"
        lines.append(f"  {name:<15} {where}")
    return "\n".join(lines)


def render(report: ExerciseReport) -> str:
    """The report as the learner reads it: PASS/FAIL per check, messages indented, then points."""
    lines = [f"Checking {report.exercise} against {report.impl}/"]
    for check in report.checks:
        points = f"{check.earned:g}/{check.max_points:g}" if check.max_points else "no points"
        lines.append(f"{'PASS' if check.passed else 'FAIL'}  {check.name} ({points})")
        if not check.passed and check.message:
            lines.extend(f"      {line}" for line in check.message.splitlines())
    journal = report.journal
    if journal is not None:
        if not journal.exists:
            lines.append(f"journal {journal.path}: missing (no points)")
        else:
            parts = [
                f"{section} {'written' if done else 'not written yet'}"
                for section, done in (
                    ("prediction", journal.prediction),
                    ("observation", journal.observation),
                )
            ]
            lines.append(f"journal {journal.path}: {', '.join(parts)} (no points)")
    lines.append(f"{report.exercise}: {report.points:g}/{report.max_points:g} points")
    return "\n".join(lines)
