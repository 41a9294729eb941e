"""The journal check (``learning.check.journal``): is each prompt read as answered only when
the learner wrote an answer of their own under it?"""

from __future__ import annotations

from pathlib import Path

import pytest

from learning import manifest
from learning.check.cli import render
from learning.check.journal import PLACEHOLDER, journal_status
from learning.check.runner import ExerciseReport

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = (ROOT / "journals" / "10-row-kernels.md").read_text()
PROMPTS = (
    "prediction 1 (Narrow rows)", "prediction 2 (Wide rows)", "prediction 3 (Accumulation)",
    "prediction 4 (Registers)", "prediction 5 (Instructions at the memory's limit)",
    "observation", "explanation of any miss",
)  # fmt: skip


def answered(text: str, *answers: str) -> str:
    """``text`` with its placeholders replaced, in order, by ``answers`` (the rest left)."""
    lines = text.splitlines()
    placeholders = [i for i, line in enumerate(lines) if PLACEHOLDER.match(line.strip())]
    for index, answer in zip(placeholders, answers, strict=False):
        lines[index] = answer
    return "\n".join(lines) + "\n"


def status_of(tmp_path: Path, text: str):
    journal = tmp_path / "10-row-kernels.md"
    journal.write_text(text)
    return journal_status(journal)


OWN = (
    "Stacked rows win, about 3x: one 256-byte row is too little work for a program.",
    "Whole rows: one read from DRAM beats a second one from L2.",
    "fp16 stops adding 1 past 2048; the sum of 32768 values would stall.",
    "One program of 32 warps, two of 16; both keep every warp slot busy. The add is not slow.",
    "Nothing measurable: the kernel waits on memory, not on instructions.",
    "The rule chose 16 rows a program; the sweep read 0.21 ms against 0.64 ms.",
    "Prediction 2 missed: the chunked walk read its second pass from L2 at 6 TB/s.",
)


def test_every_journal_has_a_prompt_for_every_placeholder():
    """Does every lesson's journal template read as unanswered, one prompt per placeholder?"""
    for lesson in manifest.load().lessons.values():
        path = ROOT / lesson.journal
        status = journal_status(path)
        placeholders = [line for line in path.read_text().splitlines()
                        if PLACEHOLDER.match(line.strip())]  # fmt: skip
        assert len(status.prompts) == len(placeholders), path
        assert status.unanswered == status.prompts, path


def test_the_untouched_template_has_no_answer(tmp_path):
    """Is every prompt of the template unanswered, and named as such in the report line?"""
    status = status_of(tmp_path, TEMPLATE)
    assert status.prompts == PROMPTS
    assert status.unanswered == PROMPTS
    assert not status.prediction and not status.observation
    summary = status.summary()  # one short line: a journal not started names no prompt
    assert summary.startswith("0 of 7 prompts answered (write your own words below each prompt")
    assert "Narrow rows" not in summary and len(summary) <= 120, summary


@pytest.mark.parametrize("placeholder", ["TODO", "todo: fill in later", "TBD", "...", "?", "-"])
def test_a_todo_or_a_mark_is_not_an_answer(tmp_path, placeholder):
    """Does a TODO (or a mark with no words) left in place of an answer count as unanswered?"""
    status = status_of(tmp_path, answered(TEMPLATE, *OWN[:2], placeholder, *OWN[3:]))
    assert status.unanswered == ("prediction 3 (Accumulation)",)
    assert not status.prediction and status.observation


def test_a_copy_of_the_prompt_or_of_the_template_is_not_an_answer(tmp_path):
    """The prompt pasted back, the placeholder without its italics, the journal's own
    introduction: none of them is the learner's answer."""
    copies = (
        "Softmax at 65536 x 128 fp16: one row per program, or 16 rows stacked in one program",
        "Write your prediction here before running.",
        "Write the prediction before you run anything, and do not edit it afterwards",
    )
    status = status_of(tmp_path, answered(TEMPLATE, *copies, *OWN[3:]))
    assert status.unanswered == PROMPTS[:3]


def test_a_partly_written_journal_names_the_prompts_left(tmp_path):
    """Two predictions answered, the rest untouched: are the five left named, by prompt?"""
    status = status_of(tmp_path, answered(TEMPLATE, *OWN[:2]))
    assert status.unanswered == PROMPTS[2:]
    assert not status.prediction  # a section counts once every prompt in it is answered
    assert "2 of 7 prompts answered; not answered yet: prediction 3 (Accumulation)" in (
        status.summary())  # fmt: skip


def test_a_complete_journal_is_answered_even_with_short_answers(tmp_path):
    """Every placeholder replaced by the learner's words, some as short as "Faster." (a word
    the prompt uses too): is every prompt answered?"""
    status = status_of(tmp_path, answered(TEMPLATE, "Faster.", *OWN[1:6], "None missed."))
    assert status.unanswered == ()
    assert status.prediction and status.observation
    assert status.summary() == "7 of 7 prompts answered"


def test_an_answer_on_the_prompts_own_lines_is_not_seen_and_the_message_says_where(tmp_path):
    """An answer typed straight after the prompt, with no blank line: it is not read as an
    answer, and the report says to write it after a blank line."""
    text = answered(TEMPLATE, "", *OWN[1:])
    text = text.replace("By how much?\n", "By how much? Faster, 3x.\n")
    status = status_of(tmp_path, text)
    assert status.unanswered == ("prediction 1 (Narrow rows)",)
    assert "below each prompt, after a blank line" in status.summary()


def test_the_report_line_names_the_unanswered_prompts(tmp_path):
    """Does the check's printed report carry the journal line with the prompts left?"""
    status = status_of(tmp_path, answered(TEMPLATE, *OWN[:6]))
    report = ExerciseReport("softmax", "exercises", (), 0.0, 10.0, status, 0.0)
    line = render(report).splitlines()[-2]
    assert line.startswith(f"journal {status.path}: 6 of 7 prompts answered; not answered yet: "
                           "explanation of any miss")  # fmt: skip
    assert line.endswith("(no points)")
