"""Does every lesson say which card its quoted figures were measured on?

Recorded evidence lives in a folder per GPU model (``results/h200/``, ``results/h100/``), and one
card's figures say nothing of another's. A lesson that quotes a card's report through a marker
must name that card in its own words (``H200`` for ``results/h200/``), so a learner comparing
with their own GPU knows what they compare with.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LESSONS = sorted((ROOT / "lessons").glob("*.md"))
MARKER = re.compile(r"<!--\s*(?:q|quote):\s*results/([\w-]+)/")
MARKUP = re.compile(r"<!--.*?-->", re.S)


def cards_quoted(text: str) -> set[str]:
    return set(MARKER.findall(text)) - {"notes", "snapshots", "local"}


def names_card(text: str, card: str) -> bool:
    """The card's model in the lesson's words, outside the markers (``h200`` -> ``H200``)."""
    words = MARKUP.sub(" ", text)
    return re.search(rf"(?<![\w/]){re.escape(card.upper())}(?![\w/])", words) is not None


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda path: path.name)
def test_a_lesson_names_the_card_of_every_figure_it_quotes(lesson):
    text = lesson.read_text()
    unnamed = sorted(card for card in cards_quoted(text) if not names_card(text, card))
    assert not unnamed, (
        f"{lesson.name} quotes results/{unnamed[0]}/ but never says the figures come from an "
        f"{unnamed[0].upper()}"
    )


def test_the_rule_finds_a_lesson_that_does_not_name_its_card():
    quoted = "Softmax reads <!-- q: results/h100/all.json softmax 1024x1024 float16 triton "
    assert cards_quoted(quoted + "ratio -->2.0<!-- /q -->.") == {"h100"}
    assert not names_card(quoted + "ratio -->2.0<!-- /q --> (`results/h100/all.json`).", "h100")
    assert names_card(quoted + "ratio -->2.0<!-- /q --> on an NVIDIA H100.", "h100")
