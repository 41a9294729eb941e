"""Does ``python -m learning handin`` pack exactly what the grader needs, and does the grader
take the archive (and refuse a hostile one without stopping the class)?

A learner's clone of the committed release holds a finished add kernel and, under
``results/local/``, what a learner's folder really holds there: their own ``--impl learner``
report, a reference run (``make course`` and lesson 8 write those), and a file that is not a
report. Only the first may be packed.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from own_work import own_solution  # the learner's own add kernel, not the reference's

from learning.grade import GradeInputError, find_submissions, grade_submissions
from learning.grade.cli import main as grade_main
from learning.grade.clone import make_clone, run_bench

KERNEL = "exercises/kernels/add.py"
BENCH = ["--op", "add", "--shape", "16", "256", "--dtype", "float32", "--samples", "3",
         "--visits", "1", "--device", "cpu"]  # fmt: skip


def _handin(clone: Path, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "learning", "handin", *arguments],
        cwd=clone,
        env={**os.environ, "PYTHONPATH": str(clone)},
        capture_output=True,
        text=True,
    )


# One pytest-xdist worker builds the learner every test here reads (a module fixture).
pytestmark = pytest.mark.xdist_group("handin")


@pytest.fixture(scope="module")
def learner(tmp_path_factory) -> dict:
    work = tmp_path_factory.mktemp("handin")
    release = make_clone(work / "release")
    solved = work / "add.py"
    solved.write_bytes(own_solution(KERNEL, release))
    clone = make_clone(work / "alice", release, {KERNEL: solved})
    local = clone / "results" / "local"
    local.mkdir(parents=True)
    run_bench(clone, [*BENCH, "--impl", "learner"], local / "add.json")
    run_bench(clone, [*BENCH, "--impl", "reference"], local / "softmax-cpu.json")
    (local / "notes.json").write_text("not json at all")
    archive = work / "alice.zip"
    completed = _handin(clone, "--output", str(archive))
    return {"work": work, "release": release, "clone": clone, "archive": archive,
            "completed": completed}  # fmt: skip


def test_only_the_learners_own_reports_are_packed(learner):
    assert learner["completed"].returncode == 0, learner["completed"].stderr
    with zipfile.ZipFile(learner["archive"]) as bundle:
        names = set(bundle.namelist())
        manifest = json.loads(bundle.read("MANIFEST.json"))
    assert {"MANIFEST.json", KERNEL, "exercises/__init__.py"} <= names
    assert [n for n in names if n.startswith("reports/")] == ["reports/add.json"]
    assert set(manifest["files"]) == names - {"MANIFEST.json"}
    left_out = manifest["left_out"]
    assert left_out["results/local/softmax-cpu.json"].startswith("a --impl reference run")
    assert "not a readable JSON report" in left_out["results/local/notes.json"]
    assert "left out results/local/softmax-cpu.json" in learner["completed"].stdout


def test_an_existing_archive_is_never_overwritten(learner):
    before = learner["archive"].read_bytes()
    again = _handin(learner["clone"], "--output", str(learner["archive"]))
    assert again.returncode == 2
    lines = again.stderr.strip().splitlines()
    assert len(lines) == 1 and "exists" in lines[0], lines
    assert learner["archive"].read_bytes() == before


def test_a_report_of_an_older_file_is_warned_about(learner, tmp_path):
    kernel = learner["clone"] / KERNEL
    original = kernel.read_text()
    try:
        kernel.write_text(original + "\n# edited after the run\n")
        completed = _handin(learner["clone"], "--output", str(tmp_path / "late.zip"))
    finally:
        kernel.write_text(original)
    assert completed.returncode == 0
    assert f"results/local/add.json measured {KERNEL} before your last edit" in completed.stdout


def test_the_grader_grades_the_archive_as_a_folder(learner, tmp_path):
    submissions = tmp_path / "class"
    submissions.mkdir()
    (submissions / "alice.zip").write_bytes(learner["archive"].read_bytes())
    alice = grade_submissions(submissions, release_root=learner["release"], exercises=())[0]
    assert alice.learner == "alice"
    assert [v.path for v in alice.reports] == ["reports/add.json"]
    assert alice.reasons() == [] and alice.review_flags() == []
    assert alice.report_points == alice.report_max


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as bundle:
        for name, data in members.items():
            bundle.writestr(name, data)
    return path


@pytest.mark.parametrize(
    "member, words",
    [
        ("../../outside.py", "would be written outside the submission"),
        ("/etc/passwd", "would be written outside the submission"),
        ("setup.py", "is not under exercises, journals, reports/ or MANIFEST.json"),
    ],
)
def test_a_hostile_archive_is_one_finding(learner, tmp_path, member, words):
    submissions = tmp_path / "class"
    submissions.mkdir()
    (submissions / "alice.zip").write_bytes(learner["archive"].read_bytes())
    _zip(submissions / "mallory.zip", {member: b"print('hello')\n"})
    output = tmp_path / "grades.csv"
    argv = [str(submissions), "--output", str(output), "--release", str(learner["release"]),
            "--exercise", "tensors"]  # fmt: skip
    assert grade_main(argv) == 0
    rows = {row["learner"]: row for row in csv.DictReader(output.open())}
    assert f"[archive] mallory.zip: member {member!r} {words}" in rows["mallory"]["reasons"]
    assert rows["alice"]["reports_trusted"] == "1"
    assert not (tmp_path / "outside.py").exists()


def test_an_archive_edited_after_packing_is_flagged(learner, tmp_path):
    submissions = tmp_path / "class"
    submissions.mkdir()
    with zipfile.ZipFile(learner["archive"]) as bundle:
        members = {name: bundle.read(name) for name in bundle.namelist()}
    members[KERNEL] += b"\n# changed\n"
    _zip(submissions / "alice.zip", members)
    alice = grade_submissions(submissions, release_root=learner["release"], exercises=())[0]
    assert any(
        flag.startswith("[archive] files differ from its MANIFEST.json (edited after it was "
                        f"packed): {KERNEL}")
        for flag in alice.review_flags()
    )  # fmt: skip


def test_a_learner_handed_in_twice_is_refused(learner, tmp_path):
    submissions = tmp_path / "class"
    (submissions / "alice").mkdir(parents=True)
    (submissions / "alice.zip").write_bytes(learner["archive"].read_bytes())
    with pytest.raises(GradeInputError, match="learner 'alice' handed in twice"):
        find_submissions(submissions)
