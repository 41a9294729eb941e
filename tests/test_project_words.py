"""Does the course speak of itself only, never of how it was produced?

A learner reads the lessons, the notes on the recorded evidence and the code's comments. A
phrase such as "one round back", "this round's run", "the device machine" or "the landed
kernel" names a step of the way the repository was made, which no learner can know, where the
text should name the change, the section or the commit it means ("the kernel as it stands",
"the changed code", "the chosen candidate"). This test scans

* the prose: ``lessons/*.md``, ``docs/*.md``, ``README.md``, ``results/NOTES.md`` and
  ``results/notes/*.md``, whole;
* the comments, docstrings and string literals of the Python files under ``learning/``,
  ``reference/``, ``exercises/`` and ``scripts/`` (code itself is not prose: a ``Session``
  class is the checker's), and the other text files there whole;

as ``git ls-files`` lists them, and fails naming ``file:line`` and the phrase for each hit.
"Landed" is refused in every sense, bytes that "landed" included ("arrived", "fell"), so that
a search for the word finds nothing; no tracked file's name may hold it either.

The patterns are chosen so that the course's own vocabulary passes: kernel-bench's sampling
rounds ("once a round", "round by round", "round 5"), rounding ("2048 + 1 rounds back to
2048", "round the same way"), a GPU session as the lessons plan one, the checker's worker
session and nbgrader's, a kernel's lead over another, and the GPU's device time of a call.
"""

from __future__ import annotations

import bisect
import io
import re
import subprocess
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PROSE = ("lessons/*.md", "docs/*.md", "README.md", "results/NOTES.md", "results/notes/*.md")
CODE_DIRS = ("learning", "reference", "exercises", "scripts")
# The recorded outputs the lessons quote: their labels and logs are read by learners too.
RECORDS = ("results/h200",)
TEXT_SUFFIXES = {".py", ".md", ".sh", ".json", ".toml", ".txt", ".cfg", ".ini", ".yaml", ".yml",
                 ".log"}

_NUMBER = (
    r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|"
    r"fifteen|sixteen|seventeen|eighteen|nineteen|twenty|a\s+few|several|many|some|a)"
)
_ANY_WORDS = (
    # how many steps of the making ago: "one round back", "two rounds back's section"
    ("round counted back", rf"\b{_NUMBER}\s+rounds?\s+(?:back|ago|earlier|later)\b"),
    ("the current round", r"\bthis\s+round\b"),
    ("a round before or after", r"\b(?:next|previous|last|earlier|later)\s+rounds?\b"),
    ("the round before", r"\bthe\s+round\s+before\b"),
    ("the rounds before that", r"\brounds\s+before\s+(?:that|this)\b"),
    ("the machine that runs the work", r"\bdevice\s+machines?\b"),
    ("what was merged, not what it is", r"\blanded\b"),
    ("time lent for the work", r"\bdevice[\s-]+time\s+(?:budget|left|(?:was\s+|is\s+)?spent)\b"),
    ("time lent for the work", r"\b(?:seconds|minutes|s)\s+of\s+device\s+time\b"),
    ("time lent for the work", r"\bno\s+device\s+time\b"),
    ("a time lease", r"\bleases?\b"),
    ("who does the work", r"\b(?:sub-?)?agents?\b"),
    ("who does the work", r"\bhelper\s+(?:agents?|sessions?|engineers?)\b"),
    ("who does the work", r"\blead\s+(?:agents?|engineers?|sessions?|developers?)\b"),
    (
        "who does the work",
        r"\bthe\s+lead\s+(?:will|does|did|has|fixes|merges|asked|said|re-?records?)\b",
    ),
    ("the work's instructions", r"\b(?:the|this|your|a)\s+brief\s+(?:says|said|asks|asked)\b"),
    ("the work's instructions", r"/briefs?/"),
    (
        "a sitting of the work",
        r"\b(?:this|that|same|previous|next|earlier|later|whole|each)\s+sessions?\b",
    ),
    ("a sitting of the work", r"\bsessions?(?:'s)?\s+(?:started|began|ended|budget)\b"),
    ("a sitting of the work", r"\bthe\s+session\s+(?:started|began|ended|ran|had|was)\b"),
)
# In prose a session is always a GPU session (lesson 08): any other one is the making's.
_SESSION = re.compile(r"(?<![\w-])sessions?\b", re.IGNORECASE)
_GPU_BEFORE = re.compile(r"\bGPU\s*$", re.IGNORECASE)

ANY = tuple((name, re.compile(pattern, re.IGNORECASE)) for name, pattern in _ANY_WORDS)


@dataclass(frozen=True)
class Hit:
    path: str
    line: int
    phrase: str
    why: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {' '.join(self.phrase.split())!r} ({self.why})"


def hits_in(text: str, path: str, first_line: int = 1, prose: bool = False) -> list[Hit]:
    """Every process phrase in ``text`` (which starts at ``first_line`` of ``path``); phrases
    may run over a line break."""
    starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]

    def hit(match: re.Match, why: str) -> Hit:
        line = first_line + bisect.bisect_right(starts, match.start()) - 1
        return Hit(path, line, match.group(0), why)

    found = [hit(match, why) for why, pattern in ANY for match in pattern.finditer(text)]
    if prose:
        found += [
            hit(match, "a session that is not a GPU session")
            for match in _SESSION.finditer(text)
            if not _GPU_BEFORE.search(text, 0, match.start())
        ]  # fmt: skip
    return sorted(found, key=lambda h: h.line)


_STRING_TOKENS = {tokenize.STRING} | {getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
_QUOTED = re.compile(r"^[A-Za-z]*('\'\'|\"\"\"|'|\")(.*)\1$", re.DOTALL)


def python_text(source: str, path: str) -> list[tuple[int, str]]:
    """The comments, docstrings and string literals of a Python source, as (first line, text),
    in order. Comments on consecutive lines come as one piece, and so do the strings Python
    joins (``"a "`` then ``"b"`` with nothing but line breaks between), so a phrase broken
    over two of them is still one phrase."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError) as error:
        raise AssertionError(f"{path}: cannot tokenize: {error}") from error
    pieces: list[list] = []  # [first line, last line, text]
    open_piece: dict[str, list | None] = {"comment": None, "string": None}
    for token in tokens:
        if token.type == tokenize.COMMENT:
            kind, text = "comment", token.string.lstrip("#")
        elif token.type in _STRING_TOKENS:
            quoted = _QUOTED.match(token.string)
            kind, text = "string", quoted.group(2) if quoted else token.string
        else:
            if token.type != tokenize.NL:  # code, or a statement's end: nothing joins across it
                open_piece["string"] = None
                if token.type not in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
                    open_piece["comment"] = None
            continue
        piece = open_piece[kind]
        if piece is not None and token.start[0] - piece[1] <= 1:
            piece[2] += ("\n" if token.start[0] > piece[1] else " ") + text
            piece[1] = token.end[0]
        else:
            piece = [token.start[0], token.end[0], text]
            pieces.append(piece)
            open_piece[kind] = piece
        if kind == "string":
            open_piece["comment"] = None
    return [(first, text) for first, _, text in pieces]


def tracked_files() -> list[str]:
    """The files in scope, as git tracks them."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--", *PROSE, *CODE_DIRS, *RECORDS],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.fail(f"git ls-files failed in {ROOT}: {error}")
    return sorted(path for path in listed.split("\0") if path)


def is_prose(path: str) -> bool:
    """A file scanned whole as prose: one of ``PROSE``'s patterns, ``*`` within one folder."""
    return any(re.fullmatch(re.escape(pattern).replace(r"\*", "[^/]*"), path) for pattern in PROSE)


def scan(path: str) -> list[Hit]:
    """The process phrases in one tracked file."""
    file = ROOT / path
    if Path(path).suffix not in TEXT_SUFFIXES or not file.is_file():
        return []
    source = file.read_text(encoding="utf-8")
    if is_prose(path):
        return hits_in(source, path, prose=True)
    if file.suffix == ".py":
        return [
            hit for line, text in python_text(source, path) for hit in hits_in(text, path, line)
        ]
    return hits_in(source, path)


def test_the_scope_is_what_the_course_publishes():
    """The scan reads the lessons, the notes and the code of the four packages, no fewer."""
    files = tracked_files()
    assert "results/NOTES.md" in files and "README.md" in files
    for prefix in ("lessons/", "docs/", "results/notes/", *(d + "/" for d in CODE_DIRS + RECORDS)):
        assert any(path.startswith(prefix) for path in files), f"nothing under {prefix}"
    assert all(
        is_prose(path) for path in files if path.startswith("lessons/") and path.endswith(".md")
    )
    assert not is_prose("scripts/host_cost_probe.py") and not is_prose("lessons/figures/x.md")


def test_no_tracked_file_is_named_for_how_it_was_made():
    """A file's name is read as often as its text: ``gemm-pingpong-landed.log`` says when the
    run was made, ``gemm-pingpong-host-descriptors.log`` what it holds."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.fail(f"git ls-files failed in {ROOT}: {error}")
    named = [path for path in listed.split("\0") if re.search(r"landed", path, re.IGNORECASE)]
    assert not named, "file names that say how the repository was made: " + ", ".join(named)


def test_no_text_of_the_course_speaks_of_how_it_was_made():
    hits = [hit for path in tracked_files() for hit in scan(path)]
    assert not hits, (
        f"{len(hits)} phrase(s) about how the repository was made, not about the course; name "
        "the change, the section (by its title) or the commit instead:\n"
        + "\n".join(str(hit) for hit in hits)
    )


PROCESS_SAMPLES = (
    "the kernel of one round back, before the kept piece",
    "two rounds back's section",
    "what one\n  round back prepared",
    "this round's run",
    "Earlier rounds: predictions",
    "the next round re-records it",
    "the round before had 19",
    "the device machine receives a copy",
    "about 9 minutes of device time",
    "this round's device time was spent",
    "the commit the session started from",
    "same code, same session",
    "a helper agent wrote it",
    "the lead will fix those lines",
    "as the brief says",
    "An earlier round built the same launcher",
    "the landed kernel hides half of it",
    "the 16-bit GEMM as landed",
    "(`gemm-pingpong-landed.log`)",
    "what\nlanded: no row mask",
)
COURSE_SAMPLES = (
    "2048 + 1 rounds back to 2048",
    "kernel-bench times every variant once a round, in a shuffled order",
    "the ratio round by round, and the rounds lost",
    "both medians fall in round 5, the one round the candidate won",
    "kernels that round the same way",
    "a float16 sum rounds to the nearest even",
    "plan GPU sessions for the weeks marked below",
    "a GPU\nsession spent finding a masking bug",
    "a 0.5% lead over another; a shared clock, not a lead",
    "if its tensors lead the arguments",
    "the device time of a call that starts with a cold L2",
    "Triton's build helper and the compile helpers",
    "rmsnorm-wide-bwd-probe-round1.log",
    "each variant's median can land in either",
    "the TMA unit arrives when the bytes have arrived",
)


def code_hits(source: str) -> list[Hit]:
    return [
        hit for line, text in python_text(source, "x.py") for hit in hits_in(text, "x.py", line)
    ]


@pytest.mark.parametrize("text", PROCESS_SAMPLES)
def test_a_process_phrase_is_caught_in_prose_in_a_docstring_and_in_a_comment(text):
    assert hits_in(text, "x.md", prose=True), text
    assert code_hits(f'def f():\n    """{text}"""\n'), text
    assert code_hits("x = 1  # " + text.replace("\n", "\n# ") + "\n"), text


@pytest.mark.parametrize("text", COURSE_SAMPLES)
def test_the_courses_own_words_pass(text):
    assert not hits_in(text, "x.md", prose=True), hits_in(text, "x.md", prose=True)


def test_the_checkers_session_passes_in_code_but_a_bare_session_fails_in_prose():
    code = (
        'def load(session):\n    """Import it in the session\'s worker (a session of its own)."""\n'
    )
    assert not code_hits(code)
    assert hits_in("the session's worker", "x.md", prose=True)


def test_a_hit_names_its_line_even_across_a_line_break():
    text = "first line\nsecond line, one\n  round back's kernel\n"
    (hit,) = hits_in(text, "notes.md", first_line=10, prose=True)
    assert (hit.path, hit.line) == ("notes.md", 11)
    assert str(hit).startswith("notes.md:11: 'one round back'")


def test_python_pieces_keep_their_lines_and_join_what_python_joins():
    source = (
        "x = 1\n"
        "# a comment that ends in one\n"
        "# round back, on the next line\n"
        "y = ('first part, one round '\n"
        "     'back, second part')\n"
        "z = 'one'  # unrelated\n"
    )
    assert [hit.line for hit in code_hits(source)] == [2, 4]
    assert [line for line, _ in python_text(source, "x.py")] == [2, 4, 6, 6]


def test_a_source_that_does_not_tokenize_is_an_error_not_a_pass():
    with pytest.raises(AssertionError, match="cannot tokenize"):
        python_text('x = """never closed\n', "broken.py")
