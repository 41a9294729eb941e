"""The record of a passed exercise that the lessons' "After you pass" cells read.

`python -m learning.check NAME` keeps it (learning/check/passes.py): written when the learner's
files pass, removed when they do not, and counted only while those files are unchanged.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from learning.check import cli, passes
from learning.check.model import CheckResult
from learning.check.runner import ExerciseReport

REPO = Path(__file__).resolve().parents[2]
EXERCISE = "add"


@pytest.fixture
def course(tmp_path: Path) -> Path:
    """A course folder with the manifest and the learner's add kernel."""
    shutil.copy(REPO / "course_manifest.toml", tmp_path / "course_manifest.toml")
    kernel = tmp_path / "exercises" / "kernels" / "add.py"
    kernel.parent.mkdir(parents=True)
    kernel.write_text("# the learner's kernel\n")
    return tmp_path


def _kernel(course: Path) -> Path:
    return course / "exercises" / "kernels" / "add.py"


def test_a_pass_counts_while_the_file_is_the_one_checked(course):
    assert "not passed yet" in passes.waiting(EXERCISE, root=course)
    before = passes.digests(EXERCISE, root=course)
    path = passes.note(EXERCISE, True, 10, 10, before, root=course)
    assert path == course / "results" / "local" / "passed" / "add.json"
    assert passes.waiting(EXERCISE, root=course) is None
    _kernel(course).write_text("# edited after it passed\n")
    assert "changed since it last passed" in passes.waiting(EXERCISE, root=course)


def test_a_failed_check_takes_the_pass_away(course):
    passes.note(EXERCISE, True, 10, 10, passes.digests(EXERCISE, root=course), root=course)
    assert passes.note(EXERCISE, False, 3, 10, {}, root=course) is None
    assert "not passed yet" in passes.waiting(EXERCISE, root=course)


def test_an_edit_during_the_check_is_not_counted_as_passed(course):
    """The digests are taken before the check runs: a file changed meanwhile was not checked."""
    before = passes.digests(EXERCISE, root=course)
    _kernel(course).write_text("# written while the check ran\n")
    passes.note(EXERCISE, True, 10, 10, before, root=course)
    assert "changed since" in passes.waiting(EXERCISE, root=course)


@pytest.mark.parametrize("content", ["", "{not json", "[]", '{"files": 3}'])
def test_a_broken_record_is_not_a_pass(course, content):
    record = course / "results" / "local" / "passed" / "add.json"
    record.parent.mkdir(parents=True)
    record.write_text(content)
    assert passes.waiting(EXERCISE, root=course) is not None


def test_several_exercises_name_the_first_still_to_pass(course):
    passes.note(EXERCISE, True, 10, 10, passes.digests(EXERCISE, root=course), root=course)
    message = passes.waiting(EXERCISE, "reductions", root=course)
    assert message.startswith("reductions: not passed yet")
    assert "python -m learning.check reductions" in message


def _report(passed: bool, impl: str = "exercises") -> ExerciseReport:
    check = CheckResult("add 16x256", passed, 10.0, "" if passed else "wrong")
    return ExerciseReport(EXERCISE, impl, (check,), 10.0 if passed else 0.0, 10.0, None, 0.1)


@pytest.mark.parametrize("argv, impl, kept", [
    (["add"], "exercises", True),
    (["add", "--reference"], "reference", False),  # the reference passing is not the learner's
    (["add", "--impl", "mine"], "mine", False),
])  # fmt: skip
def test_the_command_line_keeps_the_record_of_the_learners_files_only(
    course, monkeypatch, capsys, argv, impl, kept
):
    monkeypatch.setattr(passes, "REPO", course)
    monkeypatch.setattr(cli, "check_exercise", lambda name, implementation, manifest: _report(
        True, implementation))  # fmt: skip
    assert cli.main(argv) == cli.EXIT_PASSED
    assert (passes.waiting(EXERCISE) is None) is kept
    monkeypatch.setattr(cli, "check_exercise", lambda *args, **kwargs: _report(False))
    assert cli.main(["add"]) == cli.EXIT_FAILED
    assert not (course / "results" / "local" / "passed" / "add.json").exists()
    record_dir = course / "results" / "local" / "passed"
    assert not list(record_dir.glob(".*")) if record_dir.exists() else True  # no scratch left
    capsys.readouterr()


def test_the_record_is_plain_json_naming_the_files(course):
    before = passes.digests(EXERCISE, root=course)
    path = passes.note(EXERCISE, True, 9.5, 10, before, root=course)
    record = json.loads(path.read_text())
    assert record == {"exercise": "add", "points": 9.5, "max_points": 10,
                      "files": {"exercises/kernels/add.py": before["exercises/kernels/add.py"]}}
