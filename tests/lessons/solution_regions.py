"""Which of the reference's solutions does a text show?

A solution region is what `scripts/make_exercises.py` takes out of a `reference/` file to make
the learner's copy: the lines between `### BEGIN SOLUTION` and `### END SOLUTION`, less the
`### TODO:` hint lines it keeps. The regions are read with that script's own parser, so this
module and the exercises never disagree on what a solution is.

`shown_regions(text)` names each region of which the text holds a run of lines: three
consecutive lines of the region's code (all of it when it is shorter) that the learner's copy
does not hold too, compared line by line with the indentation and the blank lines left out.
That finds a region however it was shown: printed by `inspect.getsource`, paged by
`%psource` or `??`, read with `open(...).read()` or `!cat`, cut to a slice, or in a
traceback; and the learner's copy (the TODOs and the code around them) matches nothing.
"""

from __future__ import annotations

import functools
import html
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import make_exercises  # noqa: E402

WINDOW = 3  # consecutive lines of a region that count as showing it
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
TAG = re.compile(r"<[^>]+>")


@dataclass(frozen=True)
class Region:
    path: str  # reference/...
    first: int  # 1-based line of the BEGIN marker
    last: int  # of the END marker
    runs: frozenset[tuple[str, ...]]  # its runs of lines that the learner's copies lack
    spec: bool = False  # all of it is code the engine shows as the spec (see regions())

    def __str__(self) -> str:
        return f"{self.path}:{self.first}-{self.last}"


def _code_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _runs(lines: list[str], length: int) -> set[tuple[str, ...]]:
    return {tuple(lines[i : i + length]) for i in range(len(lines) - length + 1)}


@functools.cache
def regions(root: Path = ROOT) -> tuple[Region, ...]:
    """Every solution region of every Python file under ``root/reference``.

    A run of a region's lines that a learner's copy holds as well (the reference repeats a
    few lines of a solution in code it does not strip: tile arithmetic, say) gives nothing
    away, so it does not count; nor does one that the engine's own source holds: the course
    shows the registry (`learning/ops/`) as the spec, and a solution that is that spec,
    written out again (`residual_rmsnorm` is `ops.rmsnorm_composition`), is ``spec``, with no
    runs. Every other region keeps runs that count (a test proves it)."""
    copies = make_exercises.plan(root).values()
    learners = [_code_lines(copy.content.decode("utf-8")) for copy in copies]
    learners += [_code_lines(path.read_text(encoding="utf-8"))
                 for path in sorted((root / "learning").rglob("*.py"))]  # fmt: skip
    found = []
    for copy in copies:
        if not copy.reference.endswith(".py"):
            continue
        lines = (root / copy.reference).read_text(encoding="utf-8").splitlines(keepends=True)
        for region in make_exercises._regions(lines, copy.reference):
            code = _code_lines("".join(lines[region.begin + 1 : region.end]))
            code = [line for line in code if not line.startswith(make_exercises.TODO)]
            length = min(WINDOW, len(code))
            runs = _runs(code, length).difference(*(_runs(text, length) for text in learners))
            spec = not runs and any(_holds(text, code) for text in learners[len(copies):])
            found.append(Region(copy.reference, region.begin + 1, region.end + 1,
                                frozenset(runs), spec))  # fmt: skip
    return tuple(found)


def _holds(text: list[str], code: list[str]) -> bool:
    """Whether the lines ``code`` appear in ``text`` in order, one after another."""
    return any(text[i : i + len(code)] == code for i in range(len(text) - len(code) + 1))


def without_colours(text: str) -> str:
    """Terminal text (a traceback, a page of `??`) without its colour codes."""
    return ANSI.sub("", text)


def html_text(markup: str) -> str:
    """The text an HTML output shows: its tags taken out, its entities read."""
    return html.unescape(TAG.sub("", markup))


def shown_regions(text: str, root: Path = ROOT) -> list[Region]:
    """The solution regions of which ``text`` shows a run of lines (see the module's docstring)."""
    shown = _code_lines(text)
    runs = set().union(*(_runs(shown, length) for length in range(1, WINDOW + 1)))
    return [region for region in regions(root) if not region.runs.isdisjoint(runs)]
