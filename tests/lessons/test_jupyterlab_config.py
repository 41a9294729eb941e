"""Does JupyterLab, started as the README says, list each lesson once and leave nbgrader off?

No browser needed: the test starts JupyterLab with the course's `.jupyter/` on its config path
(`course_lab.py`) and asks the server what the front end would show. The file browser
lists what the contents API lists, so `lessons/` must hold each lesson of the manifest once,
as its notebook, while `journals/` still lists every journal (a journal has its lesson's name);
and the page config JupyterLab hands the front end must disable every nbgrader extension
installed (their assignment-authoring toolbar and formgrader are the instructor's). The same
rules, asked of JupyterLab started without `.jupyter/`, must find the problems they exist for.
At the root the browser lists only the manifest's `browse` (no `lab/`, `tests/` or build
output), and the address a learner opens lands on the first lesson.
"""

from __future__ import annotations

import pytest
from course_lab import Lab, ServerFailed, running_lab

from learning import manifest as manifest_module

pytest.importorskip("jupyterlab")  # the course extra (pip install -e ".[course]")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def listing_problems(lab: Lab) -> list[str]:
    """What the file browser would show wrong: a lesson listed twice or not as its notebook, a
    journal missing."""
    problems = []
    lessons = lab.listing("lessons")
    for key in manifest_module.load().lessons:
        entries = [name for name in lessons if name.rsplit(".", 1)[0] == key]
        if entries != [f"{key}.ipynb"]:
            problems.append(f"lessons/ lists lesson {key} as {entries}, not once as its notebook")
    journals = lab.listing("journals")
    for journal in sorted(path.name for path in (lab.root / "journals").glob("*.md")):
        if journal not in journals:
            problems.append(f"journals/ does not list {journal}")
    return problems


# Folders of the repository a learner has no business browsing, made in the served copy.
MAINTAINERS = ("lab", "tests", "learning", "kernel_workshop.egg-info")


def root_problems(lab: Lab) -> list[str]:
    """What the file browser's first folder would show wrong: a maintainer's folder listed, or a
    folder the manifest names for the learner missing."""
    for name in (*MAINTAINERS, "exercises"):
        (lab.root / name).mkdir(exist_ok=True)
    shown = lab.listing("")
    browse = {name.rstrip("/") for name in manifest_module.load().browse}
    problems = [f"the root lists {name}" for name in shown if name not in browse]
    return problems + [
        f"the root does not list {name}" for name in ("lessons", "journals", "exercises")
        if name not in shown
    ]  # fmt: skip


def nbgrader_problems(lab: Lab) -> list[str]:
    """Each nbgrader extension installed that the front end would load."""
    config = lab.page_config()
    disabled = set(config.get("disabledExtensions", []))
    extensions = [entry["name"] for entry in config.get("federated_extensions", [])]
    installed = [name for name in extensions if "nbgrader" in name]
    if not installed:
        return ["no nbgrader extension is installed: the course extra should bring one"]
    return [f"{name} is enabled for learners" for name in installed if name not in disabled]


def _lab(tmp_path_factory, course_config: bool):
    try:
        with running_lab(tmp_path_factory.mktemp("jupyterlab"), course_config) as lab:
            yield lab
    except ServerFailed as error:
        pytest.fail(str(error))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab with the course's configuration, as the README starts it."""
    yield from _lab(tmp_path_factory, course_config=True)


@pytest.fixture(scope="module")
def plain_lab(tmp_path_factory):
    """JupyterLab without it: the failing case."""
    yield from _lab(tmp_path_factory, course_config=False)


def test_the_file_browser_lists_each_lesson_once(lab: Lab):
    """Does lessons/ list each lesson once, as its notebook, and journals/ every journal?"""
    assert listing_problems(lab) == []


def test_the_root_lists_the_learners_folders_alone(lab: Lab):
    """Does the file browser's first folder leave out the course's own packages and tests?"""
    assert root_problems(lab) == []


def test_jupyterlab_opens_on_the_first_lesson(lab: Lab):
    """Does the address a learner opens show the first lesson, where the README starts?"""
    first = next(iter(manifest_module.load().lessons))
    assert lab.first_screen() == f"/lab/tree/lessons/{first}.ipynb"


def test_nbgrader_is_off_for_learners(lab: Lab):
    """Does the page config disable every nbgrader extension installed?"""
    assert nbgrader_problems(lab) == []


def test_without_the_course_config_both_rules_fail(plain_lab: Lab):
    """Started without `.jupyter/`, does JupyterLab list both files of each lesson, and load
    nbgrader's extensions, as the rules say?"""
    listed = listing_problems(plain_lab)
    assert len(listed) == len(manifest_module.load().lessons), listed
    assert all("lists lesson" in problem for problem in listed), listed
    assert nbgrader_problems(plain_lab) == ["@jupyter/nbgrader is enabled for learners"]
    assert {f"the root lists {name}" for name in MAINTAINERS} <= set(root_problems(plain_lab))
    assert plain_lab.first_screen() == "/lab"
