"""Does every prediction a lesson asks for have its prompt in the lesson's journal?

A lesson asks for predictions in two places.

* Its "Predict" section (`## Predict`, `## Predict first`): a numbered list (`1. ...`), or, in
  lessons 02 to 06, a paragraph of questions, each ending in `?` or cut from the next by `;`.
  The journal answers them in order, one numbered prompt each (`**1. ...**` under
  "Prediction"), so the list's n-th item needs the journal's "prediction n".
* Further on, a paragraph that sends the learner to the journal with a prediction ("write in
  the journal what you expect", "predict before you read on, and write it in the journal's
  observation section"). Such a paragraph names the prompt the prediction goes under:
  "prediction 4", "predictions 1 to 3", or the observation section.

The journal's prompts are read with the checker's own parser (`learning.check.journal`), so a
prompt found here is one that `python -m learning.check` reports as answered or not.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from learning import manifest
from learning.check.journal import journal_status

ROOT = Path(__file__).resolve().parents[2]
LESSONS = list(manifest.load().lessons.values())

_PREDICT = re.compile(r"^## Predict\b.*?\n(.*?)(?=^#|^\+\+\+|^```|\Z)", re.MULTILINE | re.DOTALL)
_NUMBERED = re.compile(r"^\d+\.\s", re.MULTILINE)
_SENTENCE_END = re.compile(r"(?<=[.?!])\s+(?=[A-Z])")
# A paragraph that asks for a prediction in the journal.
_ASKS = re.compile(r"\bpredict\b|\bexpect\b|\bprediction section\b|\bpredictions? \d",
                   re.IGNORECASE)  # fmt: skip
_NAMES_PREDICTION = re.compile(r"\bpredictions? (\d+)(?:\s*(?:to|and|-|–)\s*(\d+))?",
                               re.IGNORECASE)  # fmt: skip
_NAMES_OBSERVATION = re.compile(r"\bobservation\b", re.IGNORECASE)


def prose(text: str) -> str:
    """A lesson's markdown without its front matter, code and HTML comments."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.DOTALL)
    text = re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.MULTILINE | re.DOTALL)
    return re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)


def listed_asks(text: str) -> list[str]:
    """The predictions a lesson's Predict section asks for, in order (none without one)."""
    match = _PREDICT.search(prose(text))
    if not match:
        return []
    body = match.group(1).strip()
    if _NUMBERED.search(body):
        return [item.strip() for item in _NUMBERED.split(body)[1:]]
    # A paragraph of questions: what follows its first colon, cut into sentences and at ';'.
    questions = body.split(":", 1)[-1]
    pieces = [piece.strip() for sentence in _SENTENCE_END.split(questions)
              for piece in sentence.split(";")]  # fmt: skip
    return [piece for piece in pieces if piece and not piece.lower().startswith("write")]


def later_asks(text: str) -> list[str]:
    """The paragraphs outside the Predict section that ask for a prediction in the journal."""
    body = _PREDICT.sub("", prose(text))
    return [" ".join(paragraph.split()) for paragraph in re.split(r"\n\s*\n", body)
            if "journal" in paragraph.lower() and _ASKS.search(paragraph)]  # fmt: skip


def named_prompts(paragraph: str) -> list[str]:
    """The journal prompts a paragraph names: "prediction N", or "observation"."""
    named = []
    for first, last in _NAMES_PREDICTION.findall(paragraph):
        numbers = range(int(first), int(last or first) + 1)
        named += [f"prediction {n}" for n in numbers]
    if _NAMES_OBSERVATION.search(paragraph):
        named.append("observation")
    return named


def has_prompt(prompts: tuple[str, ...], wanted: str) -> bool:
    """``prediction 4`` is the prompt ``prediction 4 (Warps)``; ``observation`` the section's
    prompt, or its first part."""
    return any(prompt == wanted or prompt.startswith((f"{wanted} (", f"{wanted}, "))
               for prompt in prompts)  # fmt: skip


def missing_prompts(text: str, prompts: tuple[str, ...]) -> list[str]:
    """What a lesson asks for that its journal has no prompt for, one line each."""
    missing = [f"the Predict section's item {n} ({ask[:60]}...) has no 'prediction {n}'"
               for n, ask in enumerate(listed_asks(text), 1)
               if not has_prompt(prompts, f"prediction {n}")]  # fmt: skip
    for paragraph in later_asks(text):
        named = named_prompts(paragraph)
        if not named:
            missing.append(
                f"'{paragraph[:100]}...' asks for a prediction in the journal "
                "without naming its prompt (prediction N, or the observation)"
            )
        missing += [f"'{paragraph[:100]}...' names {name}, which the journal does not have"
                    for name in named if not has_prompt(prompts, name)]  # fmt: skip
    return missing


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.key for lesson in LESSONS])
def test_every_prediction_the_lesson_asks_for_has_a_prompt_in_its_journal(lesson):
    text = (ROOT / lesson.source).read_text(encoding="utf-8")
    status = journal_status(ROOT / lesson.journal)
    assert status.exists, f"{lesson.journal} is missing"
    missing = missing_prompts(text, status.prompts)
    assert not missing, (
        f"{lesson.source} asks for predictions that {lesson.journal} has no prompt for (its "
        f"prompts: {', '.join(status.prompts)}):\n" + "\n".join(missing)
    )


def test_the_asks_are_found():
    """The finder is not blind: the numbered lists, the paragraphs of questions and the
    requests further on are all seen in the course's lessons."""
    text = {lesson.number: (ROOT / lesson.source).read_text() for lesson in LESSONS}
    assert len(listed_asks(text[10])) == 5  # a numbered list
    assert len(listed_asks(text[2])) == 3  # three questions
    assert len(listed_asks(text[6])) == 3  # three clauses cut by ';'
    assert [named_prompts(p) for p in later_asks(text[7])] == [
        ["prediction 1", "prediction 2", "prediction 3"],
        ["prediction 4"],
        ["prediction 5"],
    ]
    assert ["observation"] in [named_prompts(p) for p in later_asks(text[14])]


def test_an_ask_without_a_prompt_is_caught():
    """A lesson that asks for a sixth prediction, and one that asks without naming the prompt:
    both are reported against a journal of five."""
    prompts = tuple(f"prediction {n} (x)" for n in range(1, 6)) + ("observation",)
    lesson = "\n".join([
        "## Predict", "", *(f"{n}. Question {n}?" for n in range(1, 7)), "", "+++", "",
        "Before you run it, write in the journal what you expect it to read.", "",
        "Write under prediction 5 of the journal what you expect.", "",
    ])  # fmt: skip
    missing = missing_prompts(lesson, prompts)
    assert len(missing) == 2, missing
    assert "item 6" in missing[0] and "without naming its prompt" in missing[1]


def test_the_narrow_rows_prediction_asks_about_the_plan_the_rule_picks():
    """Lesson 10's first prediction and its journal prompt stack as many rows of 65536 x 128
    fp16 a program as `choose_row_plan` does for softmax."""
    from reference.kernels.row_plan import choose_row_plan

    rows = choose_row_plan(65536, 128, 2, passes=2).rows_per_program
    lesson = next(lesson for lesson in LESSONS if lesson.number == 10)
    item = listed_asks((ROOT / lesson.source).read_text())[0]
    prompt = (ROOT / lesson.journal).read_text().split("**1.", 1)[1].split("_Write", 1)[0]
    for where, words in (("lesson", item), ("journal", prompt)):
        stacked = re.findall(r"(\d+) rows stacked|stacking (\d+) rows", words)
        assert stacked, f"the {where} names no number of stacked rows: {words}"
        assert {int(a or b) for a, b in stacked} == {rows}, (where, words, rows)
