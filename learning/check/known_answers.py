"""Is a learner's function one of the course's known answers, copied and edited?

The answers ship with the course: ``reference/`` holds them today, ``results/snapshots/``
keeps every reference file a report measured, byte for byte, and the repository's history
holds every version ever committed. :mod:`learning.check.originality` finds a copy of
today's reference kernels that is the same code once names and layout are set aside; a copy
with one constant changed, or an older version of the answer, is not the same code. This
module finds those, the way MOSS does: winnowed fingerprints.

* A function's text is tokenised by copydetect (``filter_code``: every name becomes ``V``,
  every function name ``F``, every string ``S``; comments and layout go), so renaming and
  reformatting change nothing. Its k-grams of ``NOISE`` characters are hashed (CRC-32: the
  same in every process, which copydetect's own ``hash()`` of a string is not) and winnowed
  with copydetect's ``winnow``: one fingerprint of every ``GUARANTEE - NOISE + 1`` running
  k-grams, so any match of ``GUARANTEE`` characters or more shares a fingerprint.
* A **known answer** is a function that holds a solution region (``### BEGIN SOLUTION``) in
  some version of a reference file, less every fingerprint the course hands out without the
  answer (the exercises as made, each version's own stub, the helpers in ``reference/``): what
  is left is what the learner was asked to write. A function that leaves fewer than
  ``SMALLEST`` fingerprints is too small to judge alone (two people write ``x - x.max()``
  alike), so those of one file version are one answer together, compared with all the
  functions of the learner's file together: a module copied whole is found, one small
  function written alike is not.
* A learner's function (or file) **matches** an answer when it holds at least ``THRESHOLD``
  of that answer's fingerprints. Reordered statements, an edit or two and renamed names leave most
  fingerprints in place; an honest solution shares the language's idioms and little else
  (the calibration, over the honest corpus and over copies with one and with several edits,
  is ``tests/learning/test_known_answers.py``).

The answers' fingerprints are built by ``scripts/known_answers.py`` into ``CORPUS``, a file
checked in beside this module: hashes only, no source, so it gives no answer away, and grading
needs no git (a learner's clone may be shallow). A test rebuilds it and compares.
"""

from __future__ import annotations

import ast
import base64
import io
import json
import tokenize
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]  # the course's, which a release copies as it is
CORPUS = Path(__file__).with_name("known_answers.json")
NOISE = 25  # k: characters of tokenised code a fingerprint covers (copydetect's default)
GUARANTEE = 30  # a match this long always shares a fingerprint (copydetect's default)
# Calibrated by tests/learning/test_known_answers.py, which records the figures and fails if
# honest work reaches THRESHOLD or an edited copy falls below it.
SMALLEST = 36  # a function answer with fewer fingerprints is compared with the others, file to file
THRESHOLD = 0.47  # the share of an answer's fingerprints a function must hold to match it
MAX_SOURCE_CHARS = 2_000_000  # a learner file larger than this is not parsed


@dataclass(frozen=True)
class Answer:
    """A function that held a solution region in one version of a reference file."""

    function: str  # _softmax_fwd_kernel; for a unit of "file", the names of its functions
    unit: str  # "function": compared with each function; "file": with the learner's file
    path: str  # the reference file it belongs to: reference/kernels/softmax.py
    origin: str  # where that version is kept: the file, a snapshot, or a commit
    fingerprints: frozenset[int]
    given: bool = False  # finished course code that the exercise imports (not a TODO's answer)


@dataclass(frozen=True)
class Match:
    """A learner's function that holds most of a known answer's fingerprints."""

    path: str  # the learner's file, as the caller named it
    name: str  # the learner's function
    answer: Answer
    score: float  # the share of the answer's fingerprints it holds

    def __str__(self) -> str:
        answer = self.answer
        what = (
            f"{self.name} matches {answer.function} of {answer.origin}"
            if answer.unit == "function"
            else f"it matches the functions {answer.function} of {answer.origin} together"
        )
        return (f"{self.path}: {what}, the course's own answer ({self.score:.0%} of what "
                "that answer adds to the exercise, once names, comments and layout are set "
                "aside)")  # fmt: skip


@lru_cache(maxsize=8192)
def fingerprints(text: str) -> frozenset[int]:
    """The winnowed fingerprints of Python ``text`` (see the module docstring). Kept for each
    text seen: a class's files share every function the exercise gave and the learner did not
    change, so grading a class lexes each of those once."""
    # imported here: copydetect imports matplotlib and pygments (0.6 s of CPU), which a
    # process that never compares code (a reference check, kernel-bench) need not pay
    from copydetect.utils import filter_code, winnow

    filtered, _ = filter_code(text, "answer.py", "python")
    if len(filtered) < NOISE:
        return frozenset()
    hashes = np.array([zlib.crc32(filtered[i : i + NOISE].encode())
                       for i in range(len(filtered) - NOISE + 1)], dtype=np.int64)  # fmt: skip
    selected, _ = winnow(hashes, GUARANTEE - NOISE + 1)
    return frozenset(int(h) for h in selected)


@lru_cache(maxsize=8192)
def _without_comments(text: str) -> str:
    """``text`` less its comments, which the fingerprints never read (the lexer drops them): two
    files that differ only in comments then share one entry of :func:`fingerprints`' cache.
    ``text`` itself where Python's tokenizer cannot read it."""
    try:
        kept = [token for token in tokenize.generate_tokens(io.StringIO(text).readline)
                if token.type != tokenize.COMMENT]  # fmt: skip
        return tokenize.untokenize(kept)
    except (tokenize.TokenError, SyntaxError, ValueError):
        return text


def functions(source: str) -> Iterable[tuple[str, str]]:
    """``(name, text)`` of each function a module defines at its top level, in a class, or
    under an ``if``/``try``/``with`` there, decorators included; none if it does not parse."""
    if len(source) > MAX_SOURCE_CHARS:
        return
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    from learning.check.originality import _functions

    lines = source.splitlines(keepends=True)
    for node in _functions(tree):
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        yield node.name, "".join(lines[first - 1 : node.end_lineno])


def pack(values: Iterable[int]) -> str:
    """Fingerprints as the corpus file keeps them: sorted unsigned 32-bit words, base64."""
    return base64.b64encode(np.array(sorted(values), dtype="<u4").tobytes()).decode()


def unpack(text: str) -> frozenset[int]:
    return frozenset(int(v) for v in np.frombuffer(base64.b64decode(text), dtype="<u4"))


@lru_cache(maxsize=4)
def _load(path: Path, stamp: int) -> tuple[Answer, ...]:
    del stamp  # part of the cache key only
    data = json.loads(path.read_text(encoding="utf-8"))
    return tuple(Answer(a["function"], a["unit"], a["path"], a["origin"],
                        unpack(a["fingerprints"]), a.get("given", False))
                 for a in data["answers"])  # fmt: skip


def answers(path: Path = CORPUS) -> tuple[Answer, ...]:
    """Every known answer of the course, from the checked-in corpus."""
    return _load(path, path.stat().st_mtime_ns)


def best(text: str, known: Iterable[Answer]) -> tuple[float, Answer | None]:
    """The answer of ``known`` that ``text`` holds the largest share of, and that share."""
    return _best(fingerprints(_without_comments(text)), tuple(known))


@lru_cache(maxsize=8192)
def _best(own: frozenset[int], known: tuple[Answer, ...]) -> tuple[float, Answer | None]:
    top, found = 0.0, None
    for answer in known:
        score = len(own & answer.fingerprints) / len(answer.fingerprints)
        if score > top:
            top, found = score, answer
    return top, found


def matches(sources: Mapping[str, str], known: Iterable[Answer] | None = None,
            only: Iterable[tuple[str, str]] | None = None) -> list[Match]:  # fmt: skip
    """The functions of ``sources`` (path -> text) that match a known answer (by default the
    course's), and the files that match a file's small answers together (their ``name`` is the
    answer's functions). ``only``: look at these ``(path, name)`` functions and no others, and
    at no whole file."""
    known = tuple(answers() if known is None else known)
    per_function = [answer for answer in known if answer.unit == "function"]
    per_file = [answer for answer in known if answer.unit == "file"]
    wanted = set(only) if only is not None else None
    found = []
    for path, source in sorted(sources.items()):
        whole: set[int] = set()  # the file's functions' fingerprints, as a file answer is built
        for name, text in functions(source):
            whole |= fingerprints(_without_comments(text))
            if wanted is not None and (path, name) not in wanted:
                continue
            score, answer = best(text, per_function)
            if answer is not None and score >= THRESHOLD:
                found.append(Match(path, name, answer, score))
        if wanted is None and whole:
            score, answer = _best(frozenset(whole), tuple(per_file))
            if answer is not None and score >= THRESHOLD:
                found.append(Match(path, answer.function, answer, score))
    return found


def from_reference(path: str, source: str) -> dict[str, str]:
    """The functions of ``source`` that are the course's by import: each name bound from the
    ``reference`` package (``from reference.measurement import speedup``), and each function
    that reads such a name, with the reason; ``"*"`` for a star import or an import by a
    computed name (``importlib.import_module("reference...")``), which hides what it binds."""
    try:
        tree = ast.parse(source) if len(source) <= MAX_SOURCE_CHARS else None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    if tree is None:
        return {}
    bound: dict[str, str] = {}  # name -> the module it came from
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _course(alias.name):
                    bound[alias.asname or alias.name.partition(".")[0]] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _course(node.module or ""):
            for alias in node.names:
                bound[alias.asname or alias.name] = node.module or ""
        elif isinstance(node, ast.Call) and any(
            isinstance(a, ast.Constant) and isinstance(a.value, str) and _course(a.value)
            for a in node.args
        ):  # fmt: skip
            bound["*"] = ast.unparse(node)
    found = {name: f"{path}: {name} is imported from {module}, the course's own answer"
             for name, module in bound.items() if name != "*"}  # fmt: skip
    reads = {name: {n.id for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Name)}
             for name, text in functions(source)}  # fmt: skip
    changed = True
    while changed:  # a function that calls one of those is not the learner's either
        changed = False
        for name, read in reads.items():
            used = sorted(read & (set(bound) | set(found)) - {name})
            if used and name not in found:
                origin = f"from {bound[used[0]]}" if used[0] in bound else "in turn"
                found[name] = (f"{path}: {name} calls {used[0]} ({origin}), the course's "
                               "own answer")  # fmt: skip
                changed = True
    if "*" in bound:
        found["*"] = f"{path}: {bound['*']} brings in the course's own answers"
    return found


def _course(module: str) -> bool:
    return module == "reference" or module.startswith("reference.")


def copied_functions(sources: Mapping[str, str]) -> dict[str, str]:
    """For the pure-Python exercises: each function of the learner's files (path -> text) that
    is a known answer, copied or imported, with the reason (``"*"``: all of them)."""
    found: dict[str, str] = {}
    for path, source in sorted(sources.items()):
        found.update(from_reference(path, source))
        for match in matches({path: source}):
            for name in match.name.split(", "):
                found.setdefault(name, str(match))
    return found
