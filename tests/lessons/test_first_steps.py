"""Does a learner's first step after set-up come with it?

* `make course` runs the same checks as before and ends by naming the lesson to open first
  (the one the README and the schedule start with) and the command that opens it, with
  `--allow-root` when run as root;
* the README says how to start JupyterLab as root, which it refuses without `--allow-root`.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from course_map import README, ROOT, starts

from learning import manifest

LESSONS = {lesson.number: lesson for lesson in manifest.load().lessons.values()}


def test_make_course_ends_with_the_lesson_to_open_after_its_checks():
    """`make -n course` (the recipe printed, nothing run; `-o` takes the virtual environment
    as made): the checks are all there, and the last line prints the first lesson's notebook
    and the JupyterLab command that opens it."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    # Under `make test` this runs inside another make, whose MAKEFLAGS and MAKELEVEL would
    # add "Entering/Leaving directory" lines to what is printed: the recipe alone is wanted.
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")}  # fmt: skip
    printed = subprocess.run(
        ["make", "--no-print-directory", "-n", "-o", ".venv/.installed", "course"], cwd=ROOT,
        capture_output=True, text=True, check=True, env=environment,
    ).stdout.splitlines()  # fmt: skip
    recipe = "\n".join(printed)
    checks = (
        "-m learning.check measurement --reference",
        "-m learning.check softmax --reference",
        "kernel-bench --op softmax",
    )
    for check in checks:
        assert check in recipe, f"make course no longer runs {check!r}"
    last = subprocess.run(["bash", "-c", printed[-1]], capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip
    (first,) = starts(README.read_text(encoding="utf-8"))
    lesson = LESSONS[first]
    assert last.startswith(f"Next: lesson {lesson.number:02d}"), last
    assert lesson.notebook in last, last
    assert "JUPYTER_CONFIG_PATH=.jupyter .venv/bin/jupyter lab" in last, last
    assert ("--allow-root" in last) == (os.geteuid() == 0), last


def test_the_readme_says_how_to_start_jupyterlab_as_root():
    labapp = pytest.importorskip("jupyterlab.labapp")
    assert "allow-root" in labapp.LabApp.flags  # the option exists in this JupyterLab
    text = README.read_text(encoding="utf-8")
    start, end = text.index("Open them in JupyterLab"), text.index("JupyterLab opens on lesson")
    paragraph = text[start:end]
    assert "`JUPYTER_CONFIG_PATH=.jupyter .venv/bin/jupyter lab --allow-root`" in paragraph
    assert "root" in paragraph.replace("--allow-root", "")
