"""Does the glossary define every hardware and compiler term a lesson uses?

A learner who meets "CTA" or "mbarrier" in a lesson looks it up in `lessons/glossary.md`. The
terms below are the ones the course's kernels and measurements lean on; for each that appears
in a lesson (`lessons/NN-*.md`, its code and text, not the HTML comments that hold quote
markers), the glossary must have an entry for it.

How a term is found in a lesson: as a whole word (no letter, digit, `_` or `-` on either side),
singular or plural (`SMs`, `warp groups`). A term written with a capital letter (an acronym
such as `CTA`, a name such as `Nsight Compute`) must match its case, so `sm_90` is not `SM`
and a sentence's first word is not an acronym; a term written in lower case matches in any
case (`Epilogue` at a sentence's start is the epilogue).

How an entry is recognised: the glossary's entries are paragraphs that open with the term in
bold, `**Term** (lessons) definition`. An entry names every part of its bold heading split at
` / ` (`**DRAM / HBM**` names both), and the words in brackets right after it when they are
not lesson numbers (`**SM** (streaming multiprocessor)`). A term has an entry when one of
those names is the term, in any case, or its plural.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GLOSSARY = ROOT / "lessons" / "glossary.md"
LESSONS = sorted((ROOT / "lessons").glob("[0-9][0-9]-*.md"))

# The hardware and compiler terms held to the rule, in one place.
TERMS = (
    # the GPU and its memory
    "SM", "warp", "warp group", "CTA", "cluster", "register", "spill", "occupancy",
    "shared memory", "L1", "L2", "DRAM", "HBM", "tensor core", "TMA", "multicast", "mbarrier",
    "Hopper", "compute capability", "sm_90", "power limit", "NVML",
    # what a GEMM kernel is made of
    "MMA", "wgmma", "FMA", "epilogue", "split-K", "persistent kernel", "warp specialization",
    "cuBLAS", "SGEMM",
    # compilers and the tools that read their output
    "PTX", "SASS", "ptxas", "cuobjdump", "nvcc", "Gluon", "Inductor", "TF32", "CUDA graph",
    "Nsight Compute",
)  # fmt: skip

# An entry opens a paragraph; a bold term inside an entry's text (a "see **x**") is no entry.
_HEADING = re.compile(r"(?:\A|\n\n)\*\*(?P<bold>[^*]+)\*\*(?:\s*\((?P<aside>[^)]*)\))?")


def entry_names(glossary: str) -> set[str]:
    """Every name the glossary's entries are filed under, in lower case."""
    names = set()
    for match in _HEADING.finditer(glossary):
        parts = match["bold"].split(" / ")
        aside = match["aside"]
        if aside and not re.fullmatch(r"[\d,\s]+", aside):
            parts.append(aside)
        for part in parts:
            names.add(" ".join(part.split()).lower())
    return names


def has_entry(term: str, names: set[str]) -> bool:
    term = term.lower()
    return any(name in (term, term + "s", term + "es") for name in names)


def uses(text: str, term: str) -> bool:
    """Does the text use the term as a word (singular or plural), by the case rule above?"""
    pattern = r"\s+".join(map(re.escape, term.split()))
    pattern = rf"(?<![\w-]){pattern}(?:s|es)?(?![\w-])"
    flags = 0 if any(c.isupper() for c in term) else re.IGNORECASE
    return re.search(pattern, text, flags) is not None


def lesson_text(path: Path) -> str:
    """A lesson's markdown without its front matter and HTML comments (the quote markers)."""
    text = re.sub(r"\A---\n.*?\n---\n", "", path.read_text(), flags=re.DOTALL)
    return re.sub(r"<!--.*?-->", " ", text, flags=re.DOTALL)


def test_every_term_a_lesson_uses_has_a_glossary_entry():
    names = entry_names(GLOSSARY.read_text())
    missing = {}
    for lesson in LESSONS:
        text = lesson_text(lesson)
        for term in TERMS:
            if uses(text, term) and not has_entry(term, names):
                missing.setdefault(term, []).append(lesson.stem[:2])
    assert not missing, (
        "terms the lessons use with no entry in lessons/glossary.md (add `**Term** (lessons) "
        "definition`, in alphabetical order):\n"
        + "\n".join(f"  {term}: lessons {', '.join(found)}" for term, found in missing.items())
    )


def test_the_glossary_parser_finds_the_entries_it_should():
    """Are entries found by their heading, their ` / ` parts and their aside?"""
    names = entry_names(GLOSSARY.read_text())
    for name in ("sm", "streaming multiprocessor", "tma", "dram", "hbm", "warp", "l2"):
        assert name in names, f"the glossary's entry for {name!r} was not recognised"
    sample = ("**DRAM / HBM** (07). Memory.\n\n**SM** (streaming multiprocessor) (09). A\n"
              "**processor**, see **warp**.\n")
    assert entry_names(sample) == {"dram", "hbm", "sm", "streaming multiprocessor"}


@pytest.mark.parametrize(
    ("text", "term", "found"),
    [
        ("the SMs of the H200", "SM", True),
        ("compiled for sm_90", "SM", False),
        ("Epilogue: round and store", "epilogue", True),
        ("two warp groups take turns", "warp group", True),
        ("a warp-specialized loop", "warp", False),
        ("each CTA of a cluster", "CTA", True),
        ("an ACTA paper", "CTA", False),
    ],
)
def test_a_term_is_found_as_a_word_with_its_case_rule(text, term, found):
    assert uses(text, term) is found


def test_the_rule_fails_on_a_term_with_no_entry():
    names = entry_names("**Warp** (09). 32 threads.\n")
    assert has_entry("warp", names) and has_entry("Warp", names)
    assert uses("a CTA runs on one SM", "CTA") and not has_entry("CTA", names)
