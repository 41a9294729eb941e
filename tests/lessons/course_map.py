"""The course's two maps, read as data: the table of the README's "The path through the
course" and the table of `lessons/schedule.md`.

Each table has a row a week, with a `lessons` column (each lesson starts with its two-digit
number: `01 tensors ... · 02 add ...`, or `01 Tensors ...; 02 ...`), an `exercises` column
(exercise names in backticks) and a `GPU` column. Each map also says where to start, in the
words "start with lesson NN".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SCHEDULE = ROOT / "lessons" / "schedule.md"
README_SECTION = "The path through the course"

_LESSON = re.compile(r"(?:^|[;·])\s*(\d{2})\b")
_EXERCISE = re.compile(r"`([a-z][a-z0-9_]*)`")
START = re.compile(r"\bstart with lesson (\d+)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Row:
    week: str
    lessons: tuple[int, ...]  # lesson numbers, in the row's order
    exercises: tuple[str, ...]
    gpu: str


def section(text: str, heading: str) -> str:
    """The body of the ``## heading`` section of a markdown text, up to the next ``## ``."""
    pattern = rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)"
    match = re.search(pattern, text, re.MULTILINE | re.DOTALL)
    if not match:
        raise AssertionError(f"no section '## {heading}'")
    return match.group(1)


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def table(text: str) -> list[Row]:
    """The first markdown table of ``text``, one :class:`Row` a body line."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("|")), None)
    if start is None:
        raise AssertionError("no table")
    block = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        block.append(line)
    header = [cell.lower() for cell in _cells(block[0])]

    def column(name: str) -> int:
        found = [i for i, cell in enumerate(header) if cell.startswith(name)]
        if not found:
            raise AssertionError(f"the table has no column '{name}': {header}")
        return found[0]

    week, lessons, exercises, gpu = map(column, ("week", "lessons", "exercises", "gpu"))
    rows = []
    for line in block[2:]:  # after the header and its |---| line
        cells = _cells(line)
        rows.append(Row(
            week=cells[week],
            lessons=tuple(int(n) for n in _LESSON.findall(cells[lessons])),
            exercises=tuple(_EXERCISE.findall(cells[exercises])),
            gpu=cells[gpu],
        ))  # fmt: skip
    return rows


def readme_map(text: str | None = None) -> list[Row]:
    text = README.read_text(encoding="utf-8") if text is None else text
    return table(section(text, README_SECTION))


def schedule_map(text: str | None = None) -> list[Row]:
    return table(SCHEDULE.read_text(encoding="utf-8") if text is None else text)


def starts(text: str) -> set[int]:
    """Every lesson number a text names in "start with lesson NN"."""
    return {int(number) for number in START.findall(text)}


def course_order(rows: list[Row]) -> list[int]:
    """The lessons in the order a map takes them: week by week, each row left to right."""
    return [number for row in rows for number in row.lessons]
