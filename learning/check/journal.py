"""Whether each prompt of a lesson's journal has an answer in the learner's words (no points).

A journal template asks its questions under ``##`` sections: numbered prompts (``**1. Narrow
rows.** ...``) and, in a section without numbers, the paragraphs that end in a colon (``The
plans the rule chose ... if you ran them:``) or the section's first paragraph. Under each
prompt sits a placeholder line of its own, in italics (``_Write your prediction here before
running._``), that the learner replaces with an answer. A prompt counts as answered when the
text between it and the next prompt, placeholders and HTML comments removed, is the
learner's own: it has a letter or a digit, holds no ``TODO`` (``TBD``, ``FIXME``, ``XXX``) and
is not made only of the journal's own words (a prompt, an introduction or a placeholder
copied back). An answer written on the prompt's own lines, with no blank line between them,
is not seen: the message says where to write it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from learning import manifest as manifest_module

# A journal template's placeholder: a line of its own like "_Write your prediction here..._".
PLACEHOLDER = re.compile(r"^_Write\b.*\bhere\b.*_$")
_NUMBERED = re.compile(r"^\*\*(\d+)\.\s*(.*?)\*\*")
_PLACEHOLDER_WORDS = re.compile(r"^write\b.*\bhere\b")  # (normalised text)
_NOT_AN_ANSWER = re.compile(r"\b(todo|tbd|fixme|xxx)\b", re.IGNORECASE)
_SECTIONS = ("prediction", "observation")  # reported on their own, as before


@dataclass(frozen=True)
class JournalStatus:
    """Which of a journal's prompts hold an answer; reported, never graded."""

    path: str
    exists: bool
    prompts: tuple[str, ...] = ()  # every prompt, by name ("prediction 2 (Wide rows)")
    unanswered: tuple[str, ...] = ()

    @property
    def prediction(self) -> bool:
        return self._section_answered("prediction")

    @property
    def observation(self) -> bool:
        return self._section_answered("observation")

    def _section_answered(self, section: str) -> bool:
        mine = [p for p in self.prompts if p.startswith(section)]
        return self.exists and bool(mine) and not any(p in self.unanswered for p in mine)

    def summary(self) -> str:
        """One line: how many prompts are answered, and which are not yet."""
        if not self.exists:
            return "missing"
        answered = len(self.prompts) - len(self.unanswered)
        line = f"{answered} of {len(self.prompts)} prompts answered"
        how = ("write your own words below each prompt, after a blank line, in place of its "
               "italic placeholder")  # fmt: skip
        if not answered and self.unanswered:  # not started: naming every prompt says nothing
            line += f" ({how})"
        elif self.unanswered:
            line += f"; not answered yet: {', '.join(self.unanswered)} ({how})"
        return line

    def as_dict(self) -> dict:
        return {
            "path": self.path,
            "exists": self.exists,
            "prediction": self.prediction,
            "observation": self.observation,
            "prompts": list(self.prompts),
            "unanswered": list(self.unanswered),
        }


def journal_status(path: Path) -> JournalStatus:
    """Read the journal at ``path``: its prompts, and those without an answer."""
    try:
        shown = str(path.relative_to(manifest_module.ROOT))
    except ValueError:
        shown = str(path)
    if not path.is_file():
        return JournalStatus(shown, exists=False)
    prompts, template = _prompts(path.read_text(encoding="utf-8"))
    words = f" {_normal(template)} "
    unanswered = tuple(name for name, answer in prompts if not _answers(answer, words))
    return JournalStatus(shown, True, tuple(name for name, _ in prompts), unanswered)


def _prompts(text: str) -> tuple[list[tuple[str, str]], str]:
    """``(name, answer)`` for each prompt in order, and the journal's own words (its
    introduction, prompts and placeholders)."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)
    intro, *sections = re.split(r"^##\s+", text, flags=re.MULTILINE)
    template = [intro]
    prompts: list[list[str]] = []  # name, answer
    for section in sections:
        heading, _, body = section.partition("\n")
        title = heading.split(" (")[0].strip().lower()
        mine: list[list[str]] = []
        numbered_section = False
        for paragraph in (p.strip() for p in re.split(r"\n\s*\n", body)):
            numbered = _NUMBERED.match(paragraph)
            if not paragraph:
                continue
            if PLACEHOLDER.match(paragraph):
                template.append(paragraph)
            elif numbered:
                numbered_section = True
                label = numbered.group(2).strip().rstrip(".")
                label = label if len(label) <= 40 else label[:37].rstrip() + "..."
                name = f"{title} {numbered.group(1)} ({label})"
                mine.append([name, ""])
                template.append(paragraph)
            elif not mine or (paragraph.endswith(":") and not numbered_section):
                mine.append([title, ""])
                template.append(paragraph)
            else:
                mine[-1][1] += "\n\n" + paragraph
        unnamed = [m for m in mine if m[0] == title]
        for part, m in enumerate(unnamed, 1):
            if len(unnamed) > 1:
                m[0] = f"{title}, part {part}"
        prompts += mine
    return [(name, answer) for name, answer in prompts], "\n".join(template)


def _normal(text: str) -> str:
    """Lower case, markdown emphasis and punctuation out, whitespace collapsed."""
    return " ".join(re.sub(r"[^\w\s]|_", " ", text.lower()).split())


def _answers(answer: str, template: str) -> bool:
    """Is ``answer`` the learner's own: a letter or a digit, no TODO, not a placeholder and
    not the journal's own words copied back (five words or more found in it)?"""
    if not re.search(r"[^\W_]", answer) or _NOT_AN_ANSWER.search(answer):
        return False
    words = _normal(answer)
    if _PLACEHOLDER_WORDS.match(words) and len(words.split()) <= 10:
        return False  # a placeholder, its italics taken off
    return not (f" {words} " in template and len(words.split()) >= 5)


__all__ = ["PLACEHOLDER", "JournalStatus", "journal_status"]
