"""Does every command in docs/instructor.md run as written?

The guide's shell blocks are read from the file and run in order, each in a fresh ``bash -e``,
on a made-up class: a copy of this course made into a git repository of its own (with an
``origin`` to push the release tag to), one learner (alice) who follows the learner's blocks in
a clone of it, and one (bob) whose folder holds the untouched exercises and no report. Only three
things are changed, all named in the guide: placeholders in capitals are replaced by this
test's paths, a line ending in ``# try-out adds: OPTIONS`` gets OPTIONS added, and the
learner's clone gets this test's virtual environment as its ``.venv`` (a link), in place of the
one ``make course`` makes. The learner's blocks run as a learner runs them, with no environment
active: that ``.venv``'s ``bin/`` is taken off ``PATH``, so they work only by naming
``.venv/bin/``. Between the learner's clone and their benchmark, the test does the learner's
work: an add kernel of her own (``tests/own_work.py``; a copy of the reference's would earn
nothing) and measurement answers of her own (``tests/honest/``'s; the reference's, copied,
would earn nothing too) go into the clone.
When the notebooks are collected, alice hands back her assignment folder with her measurement
answers and bob his as released: nbgrader must give her notebook full marks and his zero.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from own_work import ADD, own_solution

from learning import manifest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "honest"))
from corpus import PYTHON  # noqa: E402  (learners' own answers, which keep their full marks)

OWN_MEASUREMENT = next(s for s in PYTHON if s.path == "exercises/measurement.py")

pytest.importorskip("nbgrader")
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "instructor.md"
ASSIGNMENT = "07-measurement"  # the notebook the guide's nbgrader blocks name
TRY_OUT = "# try-out adds:"
_BLOCK = re.compile(r"^```bash\n(.*?)^```", re.MULTILINE | re.DOTALL)


def shell_blocks(text: str) -> list[str]:
    return [match.group(1) for match in _BLOCK.finditer(text)]


def tried_out(block: str) -> str:
    """The block with each ``# try-out adds: OPTIONS`` line's OPTIONS added to its command."""
    lines = []
    for line in block.splitlines():
        if TRY_OUT in line:
            before, _, options = line.partition(TRY_OUT)
            command = before.partition(" #")[0].rstrip()
            line = f"{command} {options.strip()}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def test_the_try_out_convention_adds_options_and_keeps_the_command():
    block = "python -m pytest -q   # the whole suite  # try-out adds: -k fast\n"
    assert tried_out(block) == "python -m pytest -q -k fast\n"


def _copy_course(destination: Path) -> None:
    """The working tree's tracked and untracked (not ignored) files."""
    names = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard", "-z"],
        capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, names):
        source = REPO / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def _run(block: str, cwd: Path, env: dict) -> None:
    completed = subprocess.run(
        ["bash", "-e", "-c", block], cwd=cwd, env=env, capture_output=True, text=True,
        stdin=subprocess.DEVNULL, timeout=1200,
    )  # fmt: skip
    assert completed.returncode == 0, (
        f"in {cwd}:\n{block}\nexit {completed.returncode}\n"
        f"{completed.stdout[-3000:]}\n{completed.stderr[-3000:]}"
    )


def test_every_command_of_the_guide_runs(tmp_path):
    blocks = shell_blocks(GUIDE.read_text())
    assert len(blocks) >= 8
    course, home, origin = tmp_path / "course", tmp_path / "home", tmp_path / "origin.git"
    submissions = tmp_path / "submissions"
    _copy_course(course)
    home.mkdir()
    identity = {"GIT_AUTHOR_NAME": "Instructor", "GIT_AUTHOR_EMAIL": "instructor@example.org",
                "GIT_COMMITTER_NAME": "Instructor",
                "GIT_COMMITTER_EMAIL": "instructor@example.org"}  # fmt: skip
    bin_folder = str(Path(sys.executable).parent)
    base = {**os.environ, **identity, "PATH": os.pathsep.join([bin_folder, os.environ["PATH"]])}
    venv = Path(sys.prefix)  # what `make course` makes as .venv, with kernel-bench in its bin/
    if venv == Path(sys.base_prefix) or not (venv / "bin" / "kernel-bench").is_file():
        pytest.skip(
            "the learner's commands name .venv/bin/: run this test in the course's "
            "virtual environment (make course makes it)"
        )
    # A learner's shell: no virtual environment active, its bin/ not on PATH.
    learner_path = [entry for entry in os.environ["PATH"].split(os.pathsep)
                    if entry and Path(entry).resolve() != (venv / "bin").resolve()]  # fmt: skip
    as_learner = {key: value for key, value in base.items() if key != "VIRTUAL_ENV"}
    as_learner["PATH"] = os.pathsep.join(learner_path)
    git = ["git", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", "--bare", str(origin)], check=True)
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the course"],
                    ["remote", "add", "origin", str(origin)]):  # fmt: skip
        subprocess.run([*git, *command], cwd=course, env=base, check=True)
    clone = home / "kernel-workshop"
    alice_assignment = tmp_path / "alice-07-measurement"  # her assignment folder, solved
    placeholders = {
        "SUBMISSIONS_DIR": str(submissions),
        "ALICE_ASSIGNMENT": str(alice_assignment),
        "ALICE_ZIP": str(clone / "alice.zip"),
        "REPO": str(origin),
    }
    bob = submissions / "bob"
    shutil.copytree(REPO / "exercises", bob / "exercises",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip

    for block in blocks:
        text = tried_out(block)
        for name, value in placeholders.items():
            text = re.sub(rf"\b{name}\b", value, text)
        learners = "git clone" in text or text.startswith("cd kernel-workshop")
        if "kernel-bench" in text:  # the learner's work, done before they time it
            # her own add kernel and measurement answers (copies of the reference's would earn
            # nothing)
            (clone / ADD).write_bytes(own_solution(ADD, course))
            own = OWN_MEASUREMENT.source(course)
            (clone / "exercises" / "measurement.py").write_bytes(own)
            if not (clone / ".venv").exists():  # the environment `make course` would have made
                (clone / ".venv").symlink_to(venv, target_is_directory=True)
        if "ALICE_ASSIGNMENT" in block:  # the notebooks handed back: alice's solved, bob's not
            released = course / "course" / "release" / ASSIGNMENT
            shutil.copytree(released, alice_assignment)
            own = OWN_MEASUREMENT.source(course)
            (alice_assignment / "exercises" / "measurement.py").write_bytes(own)
            shutil.copytree(released, course / "course" / "submitted" / "bob" / ASSIGNMENT)
        root = clone if clone.is_dir() else course
        shell = as_learner if learners else base
        env = {**shell, "PYTHONPATH": str(root if learners else course)}
        _run(text, home if learners else course, env)

    rows = {r["learner"]: r for r in csv.DictReader((course / "grades.csv").open())}
    assert rows["alice"]["reports_trusted"] == "1", rows["alice"]
    assert rows["alice"]["check_points"] == rows["alice"]["check_max"] == "10"
    assert "[no-reports]" in rows["bob"]["reasons"]
    retimed = {r["learner"]: r for r in csv.DictReader((course / "grades-retimed.csv").open())}
    assert retimed["alice"]["reports_trusted"] == "1", retimed["alice"]
    assert (course / "retimed" / "alice" / "add.json").is_file()
    assert (course / "feedback" / "alice.md").is_file()
    assert (course / "grades.run.json").is_file()
    with (course / "grades-nbgrader.csv").open(newline="") as stream:  # cd course, then ../
        notebooks = {r["student_id"]: r for r in csv.DictReader(stream)
                     if r["assignment"] == ASSIGNMENT}  # fmt: skip
    worth = manifest.load().exercise("measurement").points  # the lesson's one graded exercise
    assert float(notebooks["alice"]["max_score"]) == worth, notebooks["alice"]
    assert float(notebooks["alice"]["score"]) == worth, notebooks["alice"]
    assert float(notebooks["bob"]["score"]) == 0.0, notebooks["bob"]
    assert (tmp_path / "release" / "learning").is_dir()  # the worktree the grader compared with
