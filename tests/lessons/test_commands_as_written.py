"""Does every command the lessons and the README show run as written in a fresh clone?

A fresh clone has the course's tools in `.venv/bin/` and nothing on PATH: `python` may not
exist at all (only `python3`), and a bare `kernel-bench` is "command not found". So every
command shown, whether a line of a shell block or a code span in the text, names
`.venv/bin/python` or `.venv/bin/kernel-bench`, as the README's set-up does. (Cells of a
notebook run with the notebook's own Python and are not commands to type.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted((ROOT / "lessons").glob("*.md")) + [ROOT / "README.md"]
FENCE = re.compile(r"^\s*(```+|~~~+)\s*(\S*)")
SHELL = {"", "bash", "sh", "shell", "console"}
# A command line of a shell block, and a command in a code span, that starts with a bare tool.
BARE_LINE = re.compile(r"^\s*(?:\$ )?(python3?|kernel-bench) ")
BARE_SPAN = re.compile(r"`((?:python3? (?:-m |scripts/))|(?:kernel-bench (?:--|compare)))")


def bare_commands(text: str) -> list[tuple[int, str]]:
    """(line number, line) of each command shown without `.venv/bin/`."""
    found, fence, shell = [], None, False
    for number, line in enumerate(text.splitlines(), start=1):
        opened = FENCE.match(line)
        if opened and fence is None:
            fence, shell = opened.group(1)[0], opened.group(2) in SHELL
            continue
        if opened and fence == opened.group(1)[0] and not opened.group(2):
            fence, shell = None, False
            continue
        if (fence is not None and shell and BARE_LINE.match(line)) or BARE_SPAN.search(line):
            found.append((number, line.strip()))
    return found


@pytest.mark.parametrize("path", DOCUMENTS, ids=[p.name for p in DOCUMENTS])
def test_every_command_shown_names_the_courses_environment(path: Path):
    found = bare_commands(path.read_text(encoding="utf-8"))
    assert not found, "\n".join(
        f"{path.relative_to(ROOT)}:{number}: {line} (write .venv/bin/python or "
        ".venv/bin/kernel-bench: a fresh clone has neither on its PATH)" for number, line in found
    )


def test_bare_commands_are_found_in_blocks_and_spans_and_cells_are_not_commands():
    text = "\n".join([
        "Run `python -m learning.check add` now, or `kernel-bench --op add`.",  # two, one line
        "`kernel-bench` is the benchmark's name, `.venv/bin/kernel-bench --op add` a command.",
        "```bash",
        "python scripts/make_exercises.py --check",
        ".venv/bin/python -m learning.check add",
        "```",
        "```{code-cell} ipython3",
        "python = 3  # a cell's code, not a shell command",
        "```",
    ])  # fmt: skip
    assert [number for number, _ in bare_commands(text)] == [1, 4]
