"""Does ``python -m learning.grade`` grade a class, and refuse bad input without writing?

The class has two learners, made as learners make their submissions: a clone of the course
with their own ``exercises/measurement.py``, and (for the clean one) a ``kernel-bench --impl
learner`` report run in that clone. The grader re-runs the measurement checks on each.
"""

from __future__ import annotations

import csv
import importlib
import io
import json
import os
import sys
from pathlib import Path

import pytest
from own_work import own_solution  # the learner's own add kernel, not the reference's

from learning.grade import CSV_COLUMNS, GradeInputError
from learning.grade.cli import main, read_seed
from learning.grade.clone import make_clone, run_bench, submit

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "honest"))
from corpus import PYTHON  # noqa: E402  (learners' own answers, which keep their full marks)

MEASUREMENT = "exercises/measurement.py"
# A learner's own measurement answers, from the honest corpus (tests/honest/).
OWN_MEASUREMENT = next(s for s in PYTHON if s.name == "measurement_statistics")
BENCH = [
    "--op",
    "add",
    "--shape",
    "16",
    "256",
    "--dtype",
    "float32",
    "--samples",
    "3",
    "--visits",
    "1",
    "--impl",
    "learner",
    "--device",
    "cpu",
]


# One pytest-xdist worker builds the class every test here reads (a module fixture).
pytestmark = pytest.mark.xdist_group("graded_class")


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory) -> dict:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stdin", io.StringIO("1234\n"))  # --seed-stdin reads it
        return _graded_class(tmp_path_factory)


def _graded_class(tmp_path_factory) -> dict:
    """Grade ``clean`` (an add kernel of its own, the reference's measurement answers, a genuine
    report) and ``inverted`` (speedup upside down, no report) once; the tests read the
    outputs."""
    work = tmp_path_factory.mktemp("class")
    submissions = work / "submissions"
    release = make_clone(work / "release")  # the course, as learners clone it
    solved = work / "add.py"
    solved.write_bytes(own_solution("exercises/kernels/add.py", release))
    measured = work / "measurement.py"  # a learner's own answers (the reference's are a copy)
    measured.write_bytes(OWN_MEASUREMENT.source(release))
    clean = make_clone(
        work / "clean",
        release,
        learner_files={MEASUREMENT: measured, "exercises/kernels/add.py": solved},
    )
    submit(clean, submissions, "clean", [run_bench(clean, BENCH, work / "add.json")])

    inverted_source = work / "measurement_inverted.py"
    text = measured.read_text()
    assert "return baseline_ms / candidate_ms" in text
    inverted_source.write_text(
        text.replace("return baseline_ms / candidate_ms", "return candidate_ms / baseline_ms")
    )
    inverted = make_clone(work / "inverted", release, {MEASUREMENT: inverted_source})
    submit(inverted, submissions, "inverted", [])

    output, feedback, gradebook = work / "grades.csv", work / "feedback", work / "gradebook.db"
    status = main(
        [
            str(submissions),
            "--output",
            str(output),
            "--release",
            str(release),
            "--exercise",
            "measurement",
            "--seed-stdin",
            "--feedback-dir",
            str(feedback),
            "--gradebook",
            str(gradebook),
        ]
    )
    assert status == 0
    with open(output, newline="") as stream:
        rows = {row["learner"]: row for row in csv.DictReader(stream)}
    return {
        "rows": rows,
        "feedback": feedback,
        "gradebook": gradebook,
        "submissions": submissions,
        "work": work,
        "release": release,
    }


def test_a_clean_learner_gets_full_points(graded_class):
    row = graded_class["rows"]["clean"]
    assert row["points"] == row["max_points"] == "20", row["reasons"]
    assert (row["check_points"], row["report_points"], row["reports_trusted"]) == ("10", "10", "1")
    assert row["reasons"] == "" and row["needs_review"] == "no"


def test_a_failing_exercise_loses_points_with_a_reason(graded_class):
    row = graded_class["rows"]["inverted"]
    assert float(row["check_points"]) < float(row["check_max"]) == 10
    assert "[check] measurement: failed speedup" in row["reasons"]
    assert "[no-reports]" in row["reasons"] and row["report_points"] == "0"


def test_the_seed_is_recorded_beside_the_csv(graded_class):
    record = json.loads((graded_class["work"] / "grades.run.json").read_text())
    assert record["seed"] == 1234 and "--seed-stdin" in record["command"]
    assert "1234" not in " ".join(record["command"])  # read from stdin, never an argument


@pytest.mark.parametrize(
    ("given", "seed"),
    [("1234\n", 1234), ('{"seed": 77, "learners": 2}', 77), (str(2**63 - 1), 2**63 - 1)],
)
def test_the_seed_is_read_from_stdin_as_a_number_or_a_run_record(given, seed):
    assert read_seed(io.StringIO(given)) == seed


@pytest.mark.parametrize("given", ["", "-1", "12a", str(2**63), '{"seed": "x"}', "{broken"])
def test_a_seed_on_stdin_that_is_not_one_is_refused(given):
    with pytest.raises(GradeInputError, match="--seed-stdin"):
        read_seed(io.StringIO(given))


def test_a_run_without_a_seed_draws_and_records_a_secret_one(tmp_path, graded_class):
    output = tmp_path / "grades.csv"
    argv = [str(graded_class["submissions"]), "--output", str(output), "--exercise", "tensors",
            "--release", str(graded_class["release"])]  # fmt: skip
    assert main(argv) == 0
    first = json.loads((tmp_path / "grades.run.json").read_text())["seed"]
    assert main(argv) == 0
    second = json.loads((tmp_path / "grades.run.json").read_text())["seed"]
    assert isinstance(first, int) and first != second


def test_the_checker_gets_the_instructors_seed_as_an_argument(monkeypatch, tmp_path):
    """check_submission passes the seed on as an argument, never through the environment,
    which learner code could read (the grader's /proc/PID/environ)."""
    from learning.check.seeds import SEED_VARIABLE
    from learning.grade import checks

    seen = []

    def with_keyword(name, impl, *, extra_path=(), manifest=None, seed=None):
        seen.append((seed, os.environ.get(SEED_VARIABLE)))
        return real(name, impl, extra_path=extra_path, manifest=manifest)

    real = checks.check_exercise
    monkeypatch.delenv(SEED_VARIABLE, raising=False)
    monkeypatch.setattr(checks, "check_exercise", with_keyword)
    checks.check_submission("tensors", tmp_path, seed=77)
    assert seen == [(77, None)]


def test_the_csv_has_the_documented_columns(graded_class):
    with open(graded_class["work"] / "grades.csv", newline="") as stream:
        assert tuple(next(csv.reader(stream))) == CSV_COLUMNS


def test_feedback_says_what_failed_and_what_to_fix(graded_class):
    text = (graded_class["feedback"] / "inverted.md").read_text()
    assert "- FAIL speedup" in text
    assert "## What to fix" in text and "python -m learning.check" in text
    clean = (graded_class["feedback"] / "clean.md").read_text()
    assert "### reports/add.json: trusted" in clean


def test_grades_reach_the_nbgrader_gradebook(graded_class):
    from nbgrader.api import Gradebook

    from learning.grade.output import COURSE_ID, GRADEBOOK_ASSIGNMENT

    with Gradebook(f"sqlite:///{graded_class['gradebook']}", course_id=COURSE_ID) as gradebook:
        scores = {
            learner: gradebook.find_submission(GRADEBOOK_ASSIGNMENT, learner).score
            for learner in ("clean", "inverted")
        }
    assert scores["clean"] == 20
    assert scores["inverted"] == float(graded_class["rows"]["inverted"]["points"])


def test_a_check_module_that_fails_twice_makes_the_grade_incomplete_not_zero(
    graded_class, tmp_path, monkeypatch, capsys
):
    """The check module fails by itself on the first learner's exercise, and again when run
    once more (as a check module once died of CancelledError in a class run, and the CSV said
    0/10): that learner's row says ``incomplete`` with a ``[not-graded]`` reason, the feedback
    says so, the gradebook leaves them out, stderr names them and the grader exits 3. The
    next learner is graded as ever."""
    from concurrent.futures import CancelledError

    from nbgrader.api import Gradebook, MissingEntry

    from learning.grade.output import COURSE_ID, GRADEBOOK_ASSIGNMENT

    module = importlib.import_module("learning.check.foundations")
    real, runs = module.run, []

    def run(exercise, impl, session):
        runs.append(exercise)
        if len(runs) <= 2:  # the first learner's run, and its second chance
            raise CancelledError()
        return real(exercise, impl, session=session)

    monkeypatch.setattr(module, "run", run)
    output, gradebook = tmp_path / "grades.csv", tmp_path / "gradebook.db"
    status = main([str(graded_class["submissions"]), "--output", str(output), "--exercise",
                   "tensors", "--release", str(graded_class["release"]), "--gradebook",
                   str(gradebook), "--feedback-dir", str(tmp_path / "feedback")])  # fmt: skip
    assert status == 3
    assert "incomplete: clean: the checker failed twice on tensors" in capsys.readouterr().err
    with open(output, newline="") as stream:
        rows = {row["learner"]: row for row in csv.DictReader(stream)}
    assert rows["clean"]["status"] == "incomplete"
    assert "[not-graded] tensors: the checker failed twice" in rows["clean"]["reasons"]
    assert "[check]" not in rows["clean"]["reasons"]
    assert rows["inverted"]["status"] == "graded"
    text = (tmp_path / "feedback" / "clean.md").read_text()
    assert "**Incomplete:** tensors could not be graded" in text and "[not-graded]" in text
    with Gradebook(f"sqlite:///{gradebook}", course_id=COURSE_ID) as book:
        with pytest.raises(MissingEntry):
            book.find_submission(GRADEBOOK_ASSIGNMENT, "clean")
        book.find_submission(GRADEBOOK_ASSIGNMENT, "inverted")


def test_a_complete_class_has_the_status_graded(graded_class):
    assert {row["status"] for row in graded_class["rows"].values()} == {"graded"}


# --------------------------------------------------------------------------- bad input


def _assert_refused(capsys, argv: list[str], words: str, unwritten: list[Path]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("python -m learning.grade: error:"), err
    assert words in err[0]
    for path in unwritten:
        assert not path.exists()


def test_a_missing_submissions_folder_is_refused(tmp_path, capsys):
    output = tmp_path / "grades.csv"
    _assert_refused(
        capsys, [str(tmp_path / "nowhere"), "--output", str(output)], "no such folder", [output]
    )


def test_an_output_in_a_missing_folder_is_refused(tmp_path, capsys, graded_class):
    output = tmp_path / "missing" / "grades.csv"
    feedback = tmp_path / "feedback"
    argv = [
        str(graded_class["submissions"]),
        "--output",
        str(output),
        "--feedback-dir",
        str(feedback),
    ]
    _assert_refused(capsys, argv, "does not exist", [output, feedback])


def test_an_output_that_is_a_folder_is_refused(tmp_path, capsys, graded_class):
    feedback = tmp_path / "feedback"
    argv = [
        str(graded_class["submissions"]),
        "--output",
        str(tmp_path),
        "--feedback-dir",
        str(feedback),
    ]
    _assert_refused(capsys, argv, "is a folder, not a file", [feedback])


def test_an_unknown_exercise_is_refused(tmp_path, capsys, graded_class):
    output = tmp_path / "grades.csv"
    argv = [str(graded_class["submissions"]), "--output", str(output), "--exercise", "sofmax"]
    _assert_refused(capsys, argv, "unknown exercise 'sofmax'", [output])


def test_a_release_without_the_engine_is_refused(tmp_path, capsys, graded_class):
    output = tmp_path / "grades.csv"
    argv = [str(graded_class["submissions"]), "--output", str(output), "--release", str(tmp_path)]
    _assert_refused(capsys, argv, "not a course release", [output])


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"cache": "cold", "flush": "write", "clock_burst": "on", "compile": True},
        {"cache": "cold", "flush": "read", "shapes": [[4096, 4096]], "dtype": "float16"},
        {"op": "matmul", "compile": True, "compile_mode": "max-autotune"},
        {"op": "matmul", "compile": True, "compile_mode": "default"},
    ],
)
def test_the_rerun_command_reproduces_the_reports_settings(changes):
    """The feedback's kernel-bench line, parsed back, asks for what the report measured."""
    from learning.bench import cli
    from learning.grade.reports import bench_command

    settings = {
        "op": "softmax", "shapes": None, "dtype": None, "compile": False, "timing": "graph",
        "requested_timing": "graph", "cache": "warm", "flush": "read", "clock_burst": "off",
        "samples": 9, "visits": 3, "seed": 7, "impl": "learner",
    }  # fmt: skip
    settings.update(changes)
    words = bench_command({"settings": settings}).split()
    assert words[0] == "kernel-bench"
    config = cli.parse(words[1:])
    for field in ("op", "dtype", "compile", "timing", "cache", "samples", "visits", "seed", "impl"):
        assert getattr(config, field) == settings[field], field
    assert config.clock_burst == settings["clock_burst"]
    assert config.compile_mode == settings.get("compile_mode", "default")  # absent: older reports
    if settings["cache"] == "cold":
        assert config.flush == settings["flush"]
    shapes = [list(s) for s in config.shapes] if config.shapes else None
    assert shapes == settings["shapes"]


def test_an_untouched_exercise_gets_a_short_reason_and_full_feedback():
    """Sixteen failed checks: the CSV's reason counts them and names the first few; the feedback
    file still lists every one."""
    from learning.check.model import CheckResult
    from learning.check.runner import ExerciseReport
    from learning.grade.grades import NAMED_FAILURES, LearnerGrade
    from learning.grade.output import feedback

    checks = tuple(CheckResult(f"softmax check {n}", False, 1, "not run") for n in range(16))
    grade = LearnerGrade("ada", (ExerciseReport("softmax", "x", checks, 0, 10, None, 0),), (), 0)
    (reason,) = grade.reasons()
    assert reason.startswith("[check] softmax: failed 16 of 16 checks, softmax check 0,"), reason
    assert f"softmax check {NAMED_FAILURES}," not in reason and len(reason) < 200, reason
    assert all(f"FAIL softmax check {n} " in feedback(grade) for n in range(16))
