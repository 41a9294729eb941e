"""Does the normalised hash follow what a source file does, and only that, under every Python?"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from learning.report import normalize
from learning.report.fingerprint import REPO_ROOT
from learning.report.normalize import canonical_tokens, normalized_sha256, python_tokens

MODULE = '''"""The module's docstring."""

import math


class Scale:
    """A class docstring."""

    factor = 2

    def apply(self, x: float, *, offset: float = (lambda: 0.5)()) -> "float":
        """Scale x, then add the offset."""
        return self.factor * math.sqrt(x) + offset


async def fetch(names: list[str]) -> dict[str, int]:
    "One-quote docstring."
    return {name: len(name) for name in names}


def one_liner(): "A docstring on the header's line."; return 1


def plain(x):
    return x
'''


def _hash(source: str, encoding: str = "utf-8") -> str:
    return normalized_sha256(source.encode(encoding), "module.py")


def _edit(source: str, old: str, new: str) -> str:
    assert old in source, old
    return source.replace(old, new)


SAME = {
    "comments": lambda s: "# A comment.\n" + _edit(s, "import math\n", "import math  # why\n"),
    "module docstring": lambda s: _edit(s, "The module's docstring.", "Rewritten,\n\nat length."),
    "class docstring": lambda s: _edit(s, '"""A class docstring."""', "'''Another one.'''"),
    "method docstring": lambda s: _edit(s, "Scale x, then add the offset.", "Fixed wording."),
    "async def docstring": lambda s: _edit(s, '"One-quote docstring."', '"Changed." "Twice."'),
    "same-line docstring": lambda s: _edit(s, "A docstring on the header's line.", "Other."),
    "docstring removed": lambda s: _edit(s, '    """A class docstring."""\n', ""),
    "docstring added": lambda s: _edit(s, "(x):\n", '(x):\n    """Added."""\n'),
    "blank lines": lambda s: s.replace("\n\n\n", "\n\n\n\n\n"),
    "indent width": lambda s: s.replace("        ", "\t\t").replace("    ", "\t"),
    "reflowed brackets": lambda s: _edit(
        s, "(self, x: float, *, offset", "(\n        self,\n        x: float,\n        *, offset"
    ),
    "backslash continuation": lambda s: _edit(s, "sqrt(x) + offset", "sqrt(x) \\\n + offset"),
    "encoding declaration": lambda s: "# -*- coding: latin-1 -*-\n" + s,
    "line ends": lambda s: s.replace("\n", "\r\n"),
}

DIFFERENT = {
    "a constant": lambda s: _edit(s, "factor = 2", "factor = 3"),
    "a name": lambda s: _edit(s, "return self.factor", "return self.scale"),
    "an operator": lambda s: _edit(s, "+ offset", "- offset"),
    "an argument's default": lambda s: _edit(s, "0.5", "0.25"),
    "an annotation string": lambda s: _edit(s, '-> "float"', '-> "int"'),
    "an indented block": lambda s: _edit(s, "    return x", "    if x:\n        return x"),
    "a string after the first statement": lambda s: _edit(
        s, "    factor = 2\n", '    factor = 2\n    "not a docstring"\n'
    ),
    "a string that is not the whole statement": lambda s: _edit(
        s, '"One-quote docstring."', '"One-quote docstring.".upper()'
    ),
    "an f-string in a docstring's place": lambda s: _edit(s, '"One-quote', 'f"One-quote'),
    "bytes in a docstring's place": lambda s: _edit(s, '"One-quote', 'b"One-quote'),
    "a same-line body": lambda s: _edit(s, "return 1", "return 2"),
}


@pytest.mark.parametrize("change", SAME, ids=list(SAME))
def test_what_cannot_change_behaviour_keeps_the_hash(change):
    changed = SAME[change](MODULE)
    assert changed != MODULE
    encoding = "latin-1" if "coding: latin-1" in changed else "utf-8"
    assert _hash(changed, encoding) == _hash(MODULE)


@pytest.mark.parametrize("change", DIFFERENT, ids=list(DIFFERENT))
def test_a_change_to_the_code_changes_the_hash(change):
    assert _hash(DIFFERENT[change](MODULE)) != _hash(MODULE)


def test_an_edit_in_a_docstring_like_string_that_is_code_changes_the_hash():
    """b"..." and f-strings in a docstring's place are kept: editing them is a code change."""
    for prefix in ("b", "f", "rb", "Rb", "F"):
        source = f'def f():\n    {prefix}"text {{1}}"\n'
        assert _hash(source) != _hash(source.replace("text", "other")), prefix
    for prefix in ("r", "u", "R"):
        source = f'def f():\n    {prefix}"text"\n    return 1\n'
        assert _hash(source) == _hash(source.replace("text", "other")), prefix


def test_the_encoding_and_byte_order_mark_are_not_part_of_the_hash():
    text = '"""Doc."""\nname = "café"\n'
    latin = ("# coding: latin-1\n" + text).encode("latin-1")
    assert normalized_sha256(latin, "a.py") == _hash(text)
    assert normalized_sha256(b"\xef\xbb\xbf" + text.encode(), "a.py") == _hash(text)
    assert _hash(text) != _hash(text.replace("café", "cafe"))


def test_other_files_and_untokenizable_python_are_hashed_as_bytes():
    for content, name in ((b'{"a": 1}\n', "schema.json"), (b"def f(:\n  '''\n", "broken.py")):
        assert normalized_sha256(content, name) == hashlib.sha256(content).hexdigest()
    assert normalized_sha256(b"x = 1 # c\n", "a.cu") != normalized_sha256(b"x = 1\n", "a.cu")


# --------------------------------------------------------------------------- f-strings

SOURCE = (
    "width = 8\n"
    "label = f\"{width!r:>{width}} {'in'} {d['k'] if False else 1}{{literal}}\"\n"
    "text = f'''\n"
    '  {f"{width:08.3f}"=} {label!s}\n'
    "'''\n"
)
# What Python 3.12's (and 3.13's) tokenize gives for SOURCE, where 3.11 has one STRING token
# for each f-string. FSTRING_MIDDLE's positions around the doubled braces are off by one: only
# where an f-string starts and ends is used.
TOKENS_312 = [
    ('ENCODING', 'utf-8', (0, 0), (0, 0)),
    ('NAME', 'width', (1, 0), (1, 5)),
    ('OP', '=', (1, 6), (1, 7)),
    ('NUMBER', '8', (1, 8), (1, 9)),
    ('NEWLINE', '\n', (1, 9), (1, 10)),
    ('NAME', 'label', (2, 0), (2, 5)),
    ('OP', '=', (2, 6), (2, 7)),
    ('FSTRING_START', 'f"', (2, 8), (2, 10)),
    ('OP', '{', (2, 10), (2, 11)),
    ('NAME', 'width', (2, 11), (2, 16)),
    ('OP', '!', (2, 16), (2, 17)),
    ('NAME', 'r', (2, 17), (2, 18)),
    ('OP', ':', (2, 18), (2, 19)),
    ('FSTRING_MIDDLE', '>', (2, 19), (2, 20)),
    ('OP', '{', (2, 20), (2, 21)),
    ('NAME', 'width', (2, 21), (2, 26)),
    ('OP', '}', (2, 26), (2, 27)),
    ('FSTRING_MIDDLE', '', (2, 27), (2, 27)),
    ('OP', '}', (2, 27), (2, 28)),
    ('FSTRING_MIDDLE', ' ', (2, 28), (2, 29)),
    ('OP', '{', (2, 29), (2, 30)),
    ('STRING', "'in'", (2, 30), (2, 34)),
    ('OP', '}', (2, 34), (2, 35)),
    ('FSTRING_MIDDLE', ' ', (2, 35), (2, 36)),
    ('OP', '{', (2, 36), (2, 37)),
    ('NAME', 'd', (2, 37), (2, 38)),
    ('OP', '[', (2, 38), (2, 39)),
    ('STRING', "'k'", (2, 39), (2, 42)),
    ('OP', ']', (2, 42), (2, 43)),
    ('NAME', 'if', (2, 44), (2, 46)),
    ('NAME', 'False', (2, 47), (2, 52)),
    ('NAME', 'else', (2, 53), (2, 57)),
    ('NUMBER', '1', (2, 58), (2, 59)),
    ('OP', '}', (2, 59), (2, 60)),
    ('FSTRING_MIDDLE', '{', (2, 60), (2, 61)),
    ('FSTRING_MIDDLE', 'literal}', (2, 62), (2, 70)),
    ('FSTRING_END', '"', (2, 71), (2, 72)),
    ('NEWLINE', '\n', (2, 72), (2, 73)),
    ('NAME', 'text', (3, 0), (3, 4)),
    ('OP', '=', (3, 5), (3, 6)),
    ('FSTRING_START', "f'''", (3, 7), (3, 11)),
    ('FSTRING_MIDDLE', '\n  ', (3, 11), (4, 2)),
    ('OP', '{', (4, 2), (4, 3)),
    ('FSTRING_START', 'f"', (4, 3), (4, 5)),
    ('OP', '{', (4, 5), (4, 6)),
    ('NAME', 'width', (4, 6), (4, 11)),
    ('OP', ':', (4, 11), (4, 12)),
    ('FSTRING_MIDDLE', '08.3f', (4, 12), (4, 17)),
    ('OP', '}', (4, 17), (4, 18)),
    ('FSTRING_END', '"', (4, 18), (4, 19)),
    ('OP', '=', (4, 19), (4, 20)),
    ('OP', '}', (4, 20), (4, 21)),
    ('FSTRING_MIDDLE', ' ', (4, 21), (4, 22)),
    ('OP', '{', (4, 22), (4, 23)),
    ('NAME', 'label', (4, 23), (4, 28)),
    ('OP', '!', (4, 28), (4, 29)),
    ('NAME', 's', (4, 29), (4, 30)),
    ('OP', '}', (4, 30), (4, 31)),
    ('FSTRING_MIDDLE', '\n', (4, 31), (5, 0)),
    ('FSTRING_END', "'''", (5, 0), (5, 3)),
    ('NEWLINE', '\n', (5, 3), (5, 4)),
    ('ENDMARKER', '', (6, 0), (6, 0)),
]


def test_the_312_token_shape_gives_the_311_tokens():
    lines = SOURCE.splitlines(keepends=True)
    joined = canonical_tokens(TOKENS_312, lines)
    assert joined == python_tokens(SOURCE.encode())
    strings = [text for kind, text in joined if kind == "STRING"]
    assert strings == [
        "f\"{width!r:>{width}} {'in'} {d['k'] if False else 1}{{literal}}\"",
        "f'''\n  {f\"{width:08.3f}\"=} {label!s}\n'''",
    ]


def test_an_edit_inside_an_fstring_changes_the_hash():
    for old, new in (("!r", "!s"), (":>", ":<"), ("08.3f", "08.2f"), ("'k'", "'j'"), ("=}", "}")):
        assert _hash(SOURCE) != _hash(_edit(SOURCE, old, new)), (old, new)


def _other_pythons() -> list[str]:
    """Interpreters of 3.12 or later that run (a pyenv shim of a version not selected fails)."""
    found = {shutil.which(f"python3.{minor}") for minor in (12, 13, 14)}
    found |= {str(path) for path in Path.home().glob(".pyenv/versions/3.1[2-9]*/bin/python3")}
    working = []
    for path in sorted(filter(None, found)):
        try:
            answer = subprocess.run(
                [path, "-I", "-c", "import sys; print(sys.version_info >= (3, 12))"],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
        except OSError:
            continue
        if answer.stdout.strip() == "True":
            working.append(path)
    return working


OTHER_PYTHONS = _other_pythons()


HASH_FILES = """
import json, runpy, sys
normalized_sha256 = runpy.run_path(sys.argv[1])["normalized_sha256"]
print(json.dumps({path: normalized_sha256(open(path, "rb").read(), path) for path in sys.argv[2:]}))
"""


@pytest.mark.skipif(not OTHER_PYTHONS, reason="no Python 3.12 or later on this machine")
@pytest.mark.parametrize("python", OTHER_PYTHONS)
def test_another_python_gives_the_same_hashes(python, tmp_path):
    """The module runs alone (standard library only) under 3.12 or 3.13, on the course's
    sources and an f-string sample, and every hash is this interpreter's."""
    sample = tmp_path / "fstrings.py"
    sample.write_text(SOURCE + MODULE)
    folders = [REPO_ROOT / "learning", REPO_ROOT / "reference"]
    files = [str(sample)] + sorted(str(path) for f in folders for path in f.rglob("*.py"))
    answer = subprocess.run(
        [python, "-I", "-c", HASH_FILES, normalize.__file__, *files],
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    theirs = json.loads(answer.stdout)
    ours = {path: normalized_sha256(Path(path).read_bytes(), path) for path in files}
    differ = [path for path in files if theirs[path] != ours[path]]
    assert not differ, f"{python} and Python {sys.version.split()[0]} differ on {differ}"
