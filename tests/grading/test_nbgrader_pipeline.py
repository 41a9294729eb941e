"""Does the nbgrader course grade a solved notebook full marks and an untouched one zero?

The whole instructor pipeline runs headless in a temporary course folder, on a CPU:
``scripts/make_nbgrader_source.py`` -> ``nbgrader generate_assignment`` -> two submissions
under ``submitted/<learner>/<assignment>/`` (one with the reference's answers in
``exercises/measurement.py``, one as released) -> ``nbgrader autograde`` -> ``nbgrader export``.

The temporary course sits next to a copy of ``course_manifest.toml``, as ``course/`` sits in a
course checkout: the lesson's first cell finds the course's root by that file.
"""

from __future__ import annotations

import csv
import os
import shutil
import sys
from pathlib import Path

import pytest
import warm_python

pytest.importorskip("nbgrader")
pytest.importorskip("jupytext")

REPO = Path(__file__).resolve().parents[2]
ASSIGNMENT = "07-measurement"
pytestmark = pytest.mark.slow


def _run(command: list[str], cwd: Path) -> str:
    # nbgrader runs the `alembic` command to create its gradebook: this interpreter's scripts.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    completed = warm_python.run(
        command, cwd=cwd, env={**os.environ, "PATH": path}, capture_output=True, text=True
    )
    assert completed.returncode == 0, f"{' '.join(command)} failed:\n{completed.stderr[-3000:]}"
    return completed.stdout + completed.stderr


def _nbgrader(course: Path, *arguments: str) -> str:
    return _run([sys.executable, "-m", "nbgrader", *arguments], cwd=course)


def test_solved_submission_gets_full_marks_and_untouched_gets_zero(tmp_path):
    course = tmp_path / "course"
    course.mkdir()
    shutil.copyfile(REPO / "course" / "nbgrader_config.py", course / "nbgrader_config.py")
    shutil.copyfile(REPO / "course_manifest.toml", tmp_path / "course_manifest.toml")

    _run(
        [
            sys.executable,
            str(REPO / "scripts" / "make_nbgrader_source.py"),
            ASSIGNMENT,
            "--course-dir",
            str(course),
        ],
        cwd=REPO,
    )
    _nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
    released = course / "release" / ASSIGNMENT
    assert (released / f"{ASSIGNMENT}.ipynb").is_file()
    assert (released / "exercises" / "measurement.py").is_file()

    for learner in ("solved", "untouched"):
        shutil.copytree(released, course / "submitted" / learner / ASSIGNMENT)
    shutil.copyfile(
        REPO / "reference" / "measurement.py",
        course / "submitted" / "solved" / ASSIGNMENT / "exercises" / "measurement.py",
    )

    _nbgrader(course, "autograde", ASSIGNMENT, "--force")
    _nbgrader(course, "export", "--to", str(tmp_path / "grades.csv"))

    with open(tmp_path / "grades.csv", newline="") as stream:
        rows = {row["student_id"]: row for row in csv.DictReader(stream)}
    assert float(rows["solved"]["max_score"]) == 10.0
    assert float(rows["solved"]["score"]) == 10.0, rows["solved"]
    assert float(rows["untouched"]["score"]) == 0.0, rows["untouched"]
