"""Is handing in taught where a learner reads it, with commands that run?

* The README has a "Handing in" section, its commands written as the README's others are
  (`.venv/bin/python ...`);
* the first lesson that sets a graded exercise, in the course's order (`lessons/schedule.md`),
  says in a markdown cell how to hand in;
* every `python -m learning handin` command they show is one the command accepts;
* the learner's block of the instructor's guide names `.venv/bin/`, so it runs in a fresh clone
  with no environment active (`tests/grading/test_instructor_guide.py` runs it so).
"""

from __future__ import annotations

import re
import shlex

import pytest
from course_map import README, ROOT, course_order, schedule_map, section

from learning import manifest
from learning.handin import parser as handin_parser

LESSONS = {lesson.number: lesson for lesson in manifest.load().lessons.values()}
HANDIN = re.compile(r"^(?:\.venv/bin/)?python -m learning handin\b(.*)$")
BASH = re.compile(r"^```bash\n(.*?)^```", re.MULTILINE | re.DOTALL)


def bash_lines(markdown: str) -> list[str]:
    """The command lines of the ```bash blocks of a markdown text, comments taken off."""
    lines = []
    for block in BASH.findall(markdown):
        for line in block.splitlines():
            command = line.split(" #", 1)[0].strip()
            if command and not command.startswith("#"):
                lines.append(command)
    return lines


def handin_commands(markdown: str) -> list[str]:
    return [line for line in bash_lines(markdown) if HANDIN.match(line)]


def assert_handin_accepts(command: str) -> None:
    arguments = shlex.split(HANDIN.match(command).group(1))
    try:
        handin_parser().parse_args(arguments)
    except SystemExit as error:
        raise AssertionError(f"python -m learning handin refuses {arguments}: {command}") from error


def test_the_readme_teaches_handing_in_with_commands_that_run():
    body = section(README.read_text(encoding="utf-8"), "Handing in")
    commands = handin_commands(body)
    assert commands, "the README's 'Handing in' shows no python -m learning handin command"
    for command in commands:
        assert command.startswith(".venv/bin/python "), command  # as the README's others
        assert_handin_accepts(command)


def test_the_first_graded_lesson_says_how_to_hand_in():
    """The first lesson, in the schedule's order, that sets an exercise: one of its markdown
    cells gives the hand-in command."""
    jupytext = pytest.importorskip("jupytext")
    graded = [n for n in course_order(schedule_map()) if LESSONS[n].exercises]
    lesson = LESSONS[graded[0]]
    notebook = jupytext.read(ROOT / lesson.source)
    cells = [cell.source for cell in notebook.cells
             if cell.cell_type == "markdown" and handin_commands(cell.source)]  # fmt: skip
    assert cells, f"{lesson.source}: no markdown cell shows python -m learning handin"
    for command in handin_commands("\n".join(cells)):
        assert_handin_accepts(command)


def test_a_command_the_handin_refuses_is_caught():
    with pytest.raises(AssertionError, match="refuses"):
        assert_handin_accepts(".venv/bin/python -m learning handin --to x.zip")


def test_the_learners_block_of_the_instructor_guide_needs_no_active_environment():
    guide = (ROOT / "docs" / "instructor.md").read_text(encoding="utf-8")
    blocks = [block for block in BASH.findall(guide) if block.startswith("cd kernel-workshop")]
    assert len(blocks) == 1, "the guide's learner block starts with `cd kernel-workshop`"
    tools = [line for line in blocks[0].splitlines()
             if re.search(r"\b(python3?|kernel-bench|pip|jupyter)\b", line)]  # fmt: skip
    assert tools and all(line.startswith(".venv/bin/") for line in tools), tools
