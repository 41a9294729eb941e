"""A source file's identity for a report: the hash of what it does, not of its bytes.

A report records two SHA-256 hashes for every file the run executed (``fingerprint.files``:
the bytes; ``fingerprint.normalized``: this module's hash). The second one is what validation
compares, so that fixing a comment or a docstring in a measured file keeps the recorded timing
valid, while any change to the code makes it stale.

For a Python file (``.py``) the hash covers the file's tokens (module :mod:`tokenize`), less
everything that cannot change what the code does:

* comments, blank lines, line breaks inside brackets, backslash continuations and the width of
  indentation (an indented block is kept, only its width is dropped);
* docstrings: a string literal that is the whole first statement of a module, class or
  function body (``b"..."`` and f-strings are not docstrings, and neither is a string
  statement anywhere else);
* the encoding declaration and byte order mark: the tokens are hashed as UTF-8 text, with the
  line ends inside a string written ``\\n`` (as Python reads them).

Python 3.12 splits an f-string into FSTRING_START, FSTRING_MIDDLE, FSTRING_END and the tokens of
its expressions, where 3.11 gives one STRING token; here every f-string becomes one string
token holding its source text, as 3.11 has it, so both versions give the same hash. Every other
token keeps its text, so a renamed variable, a changed constant or a reordered argument
changes the hash. A file that does not tokenize, and any other file, is hashed as bytes.

Only the standard library is used: the module runs alone under any Python version, which is
how the tests compare 3.11's hashes with 3.12's.
"""

from __future__ import annotations

import hashlib
import io
import re
import tokenize
from collections.abc import Iterable, Sequence
from pathlib import Path

# Tokens that never change what the code does.
_DROPPED = {"COMMENT", "NL", "ENCODING"}
# Tokens whose text is layout only: kept as a bare marker.
_MARKERS = {"NEWLINE", "INDENT", "DEDENT", "ENDMARKER"}
_STARTS = {"FSTRING_START", "TSTRING_START"}
_ENDS = {"FSTRING_END", "TSTRING_END"}
_PREFIX = re.compile(r"[A-Za-z]*")  # a string literal's prefix: r, b, f, rb, u...
_HEADER = b"python-tokens 1\n"  # changes whenever the hashed form does

Token = tuple[str, str]  # (kind, text)
Position = tuple[int, int]  # (row from 1, column in characters)


def _slice(lines: Sequence[str], start: Position, end: Position) -> str:
    """The source text from ``start`` to ``end``."""
    (first, column), (last, end_column) = start, end
    if first == last:
        return lines[first - 1][column:end_column]
    middle = "".join(lines[first : last - 1])
    return lines[first - 1][column:] + middle + lines[last - 1][:end_column]


def _string(text: str) -> Token:
    return ("STRING", text.replace("\r\n", "\n").replace("\r", "\n"))


def canonical_tokens(
    tokens: Iterable[tuple[str, str, Position, Position]], lines: Sequence[str]
) -> list[Token]:
    """The kept tokens, each ``(kind, text)``, from ``(kind name, text, start, end)`` tuples.

    ``lines`` is the decoded source, one line each as the tokenizer read it (its own line end
    included): an f-string's tokens are joined into the source text between its start and its
    end. Layout tokens keep their kind and lose their text.
    """
    kept: list[Token] = []
    depth, opened = 0, (0, 0)  # f-strings open (nested ones count), where the outermost began
    for kind, text, start, end in tokens:
        if kind in _STARTS:
            if depth == 0:
                opened = start
            depth += 1
        elif kind in _ENDS:
            depth -= 1
            if depth == 0:
                kept.append(_string(_slice(lines, opened, end)))
        elif depth:
            continue  # inside an f-string: part of its text
        elif kind == "STRING":
            kept.append(_string(text))
        elif kind in _MARKERS:
            kept.append((kind, ""))
        elif kind not in _DROPPED:
            kept.append((kind, text))
    return _without_docstrings(kept)


def _is_plain_string(token: Token) -> bool:
    """A ``str`` literal: not bytes, not an f-string (nor a 3.14 t-string)."""
    kind, text = token
    prefix = _PREFIX.match(text).group().lower()
    return kind == "STRING" and not set(prefix) & set("bft")


def _body_starts(tokens: Sequence[Token]) -> list[int]:
    """Where each body that can have a docstring starts: the module, and every ``def`` or
    ``class`` after its header's colon (on the next line, past the INDENT, or on the same)."""
    starts, depth, header = [0], 0, False
    for index, (kind, text) in enumerate(tokens):
        if kind == "OP" and text in ("(", "[", "{"):
            depth += 1
        elif kind == "OP" and text in (")", "]", "}"):
            depth -= 1
        elif kind == "NAME" and text in ("def", "class"):
            header = True
        elif header and depth == 0 and (kind, text) == ("OP", ":"):
            header = False
            after = tokens[index + 1 : index + 3]
            block = [kind for kind, _ in after] == ["NEWLINE", "INDENT"]
            starts.append(index + 3 if block else index + 1)
    return starts


def _without_docstrings(tokens: list[Token]) -> list[Token]:
    """``tokens`` less every docstring statement (its strings and the NEWLINE or ``;`` that
    ends it)."""
    dropped: set[int] = set()
    for start in _body_starts(tokens):
        end = start
        while end < len(tokens) and _is_plain_string(tokens[end]):
            end += 1
        if end > start and end < len(tokens) and tokens[end] in (("NEWLINE", ""), ("OP", ";")):
            dropped.update(range(start, end + 1))
    return [token for index, token in enumerate(tokens) if index not in dropped]


def python_tokens(source: bytes) -> list[Token]:
    """The canonical tokens of Python source; raises SyntaxError or tokenize.TokenError."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    codec = "utf-8" if encoding == "utf-8-sig" else encoding
    read = io.BytesIO(source).readline
    lines: list[str] = []  # as the tokenizer reads them: the byte order mark removed

    def readline() -> bytes:
        line = read()
        if line:
            text = line.decode(codec)
            lines.append(text if lines else text.removeprefix("\ufeff"))
        return line

    named = (
        (tokenize.tok_name[token.type], token.string, token.start, token.end)
        for token in tokenize.tokenize(readline)
    )
    return canonical_tokens(named, lines)


def _python_digest(source: bytes) -> str | None:
    try:
        tokens = python_tokens(source)
    except (SyntaxError, tokenize.TokenError, UnicodeDecodeError, LookupError):
        return None
    digest = hashlib.sha256(_HEADER)
    for kind, text in tokens:
        encoded = text.encode("utf-8", "surrogatepass")
        digest.update(f"{kind} {len(encoded)} ".encode() + encoded + b"\n")
    return digest.hexdigest()


def normalized_sha256(content: bytes, name: str) -> str:
    """The normalised hash of a file called ``name`` (only its suffix matters) with ``content``:
    of its tokens when it is Python source that tokenizes, of its bytes otherwise."""
    if Path(name).suffix == ".py":
        digest = _python_digest(content)
        if digest is not None:
            return digest
    return hashlib.sha256(content).hexdigest()
