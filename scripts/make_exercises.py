"""Make ``exercises/`` from ``reference/``: the learner's copies, with the solutions taken out.

    python scripts/make_exercises.py               make what is missing or out of date
    python scripts/make_exercises.py --check       change nothing; say what is out of date
    python scripts/make_exercises.py --diff PATH   your PATH against the copy made now
    python scripts/make_exercises.py --stub PATH   print the copy made for PATH now
    python scripts/make_exercises.py --force PATH  take a fresh copy of PATH; yours is backed up

A file you edited is never overwritten. The record, ``exercises/.generated.json`` (kept in git,
written by this script only), holds the sha256 of each copy the script wrote and of the
reference file it was made from. A copy is rewritten only while the file still has the sha256
it was written with; an edited file is left as it is, in one line saying so. ``--force`` (for
the PATHs given, else for every edited file) first copies yours to a dated backup beside it,
``exercises/kernels/add.py.2026-12-01T2210.bak`` (``-2``, ``-3``... are added when that name is
taken, so a backup is never overwritten), then writes the new copy. A copy whose reference file
is gone is deleted only while unedited.

``--check`` prints one line a file that is not as the script makes it: ``missing``, ``out of
date`` (the reference changed; you have not edited the copy: rerun the script), ``yours`` (you
edited it; the reference has not changed since: nothing to do), ``both changed`` (you edited it
and the reference changed: merge, ``--diff PATH`` shows what), ``left over`` (its reference is
gone, or the course no longer copies it), ``unrecorded`` / ``not recorded`` (the record lacks
the file), and one line an import ``moved`` (below).

Exit status: 0 nothing to do (edited files are yours and fine); 1 (``--check``) rerunning the
script would bring every file listed up to date; 2 an error, with nothing changed (markers
that do not pair up, a damaged record, a PATH the script does not make); 3 a file you edited
waits for you: to be merged with a newer copy, or to import a helper from where it moved.

``exercises/`` holds what you write and nothing else. A Python file under ``reference/`` with a
solution region gets a copy at the same relative path, its regions replaced; so does every
``__init__.py``, as it is (``exercises/__init__.py`` selects the Triton backend like the
reference's). The other files are the course's helpers (the row plans, the launcher, the Hopper
GEMM's Gluon kernels: ``reference/kernels/row_plan.py``, ``launch.py``, ``pingpong.py``,
``cooperative.py``), which no exercise asks you to change: they are not copied, and a copy's
relative import of one is made an import from the reference (``from .row_plan import RowPlan``
becomes ``from reference.kernels.row_plan import RowPlan``). Each copy starts with a header
comment saying where it came from.

Helpers were once copied too. A helper's old copy that you never edited is removed by a run
(``left over``); one you edited is kept where it is, no longer recorded, and said so
(``yours``). A file of yours that still imports a helper the old way (``from .row_plan import
...``) while that copy is gone or about to go is named with its line and the import to write
instead (``moved``); the script never changes it.

A solution region is marked by two lines of their own, indented like the code::

    ### BEGIN SOLUTION
    ### TODO: the hint the learner keeps (optional; several lines allowed)
    ...the solution...
    ### END SOLUTION

It becomes the TODO lines as ``# TODO: ...`` comments, then:

* inside a ``@triton.jit`` (or ``triton.autotune``/``triton.heuristics``) function: ``pass``,
  because a Triton kernel cannot raise;
* anywhere else: ``raise NotImplementedError("<file>:<function>: <the TODO text>")``, so the
  checker can say which function is not written yet.

Markers that do not pair up are an error naming the file and line.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import hashlib
import json
import os
import re
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END, TODO = "### BEGIN SOLUTION", "### END SOLUTION", "### TODO:"
# A course-code region: finished code of the course's that an exercise's file uses but must not
# hold, since it would solve the exercise's own TODOs (the persistent GEMM kernel holds the
# tile mapping, the K loop and the masked store _matmul_tile asks for). The copy imports the
# names it defines from the reference module instead, so a kernel that calls them is the
# course's, never the learner's (learning.check.replay.extract).
GIVEN_BEGIN, GIVEN_END = "### BEGIN COURSE CODE", "### END COURSE CODE"
TRITON_DECORATORS = ("triton.jit", "triton.autotune", "triton.heuristics", "jit")
SKIPPED_PARTS = ("__pycache__", ".ipynb_checkpoints")
LINE_LENGTH = 100  # pyproject's ruff line length: the copies stay lint-clean


class MarkerError(ValueError):
    """The solution markers in a reference file do not pair up, or leave invalid Python."""


def header(source: str) -> str:
    return (
        f"# Your copy of {source},\n"
        "# made by scripts/make_exercises.py with the solution regions replaced by TODOs.\n"
        "# This file is yours to edit; `python -m learning.check <exercise>` grades it.\n"
        "# (Maintainers: edit the reference and rerun the script, never this copy.)\n"
    )


@dataclass(frozen=True)
class _Region:
    begin: int  # 0-based line index of the BEGIN marker
    end: int  # of the END marker
    todos: tuple[str, ...]


def strip_solutions(source: str, *, path: str, exercise_path: str) -> str:
    """``source`` (the reference file at ``path``) with every solution region replaced.

    ``exercise_path`` is the copy's path as the NotImplementedError messages name it.
    """
    lines = source.splitlines(keepends=True)
    regions = list(_regions(lines, path))
    if not regions:
        return source
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as error:
        message = f"{path}:{error.lineno}: the reference does not parse: {error.msg}"
        raise MarkerError(message) from None
    functions = list(_functions(tree))
    out: list[str] = []
    cursor = 0
    for region in regions:
        out.extend(lines[cursor : region.begin])
        marker = lines[region.begin]
        indent = marker[: len(marker) - len(marker.lstrip())]
        out.extend(f"{indent}# TODO: {todo}\n" for todo in region.todos)
        name, in_kernel = _enclosing(functions, region.begin + 1)
        if in_kernel:
            out.append(f"{indent}pass\n")
        else:
            what = " ".join(region.todos) or "not written yet"
            out.extend(_raise_lines(indent, f"{exercise_path}:{name}: {what}"))
        cursor = region.end + 1
    out.extend(lines[cursor:])
    stripped = "".join(out)
    try:
        ast.parse(stripped, filename=exercise_path)
    except SyntaxError as error:
        raise MarkerError(
            f"{path}: the copy without solutions is not valid Python ({error.msg} at line "
            f"{error.lineno}); a region must hold whole statements"
        ) from None
    return stripped


def take_out_course_code(source: str, *, path: str) -> str:
    """``source`` (the reference file at ``path``) with each course-code region replaced by
    an import, from the reference module, of the names the region defines that the rest of the
    file reads."""
    lines = source.splitlines(keepends=True)
    marks = [i for i, line in enumerate(lines) if line.strip() in (GIVEN_BEGIN, GIVEN_END)]
    if not marks:
        return source
    pairs = list(zip(marks[::2], marks[1::2], strict=False))
    if len(marks) % 2 or any(lines[b].strip() != GIVEN_BEGIN or lines[e].strip() != GIVEN_END
                             for b, e in pairs):  # fmt: skip
        raise MarkerError(f"{path}:{marks[0] + 1}: {GIVEN_BEGIN} and {GIVEN_END} do not pair up")
    tree = ast.parse(source, filename=path)
    module = PurePosixPath(path).with_suffix("").as_posix().replace("/", ".")
    out, cursor = [], 0
    for begin, end in pairs:
        defined = [node.name for node in tree.body
                   if isinstance(node, ast.FunctionDef | ast.ClassDef)
                   and begin < node.lineno - 1 < end]  # fmt: skip
        outside = "".join(lines[:begin] + lines[end + 1 :])
        read = {n.id for n in ast.walk(ast.parse(outside)) if isinstance(n, ast.Name)}
        names = [name for name in defined if name in read]
        out.extend(lines[cursor:begin])
        out.append("# The course's code, imported: not yours to write or to hand in\n")
        out.append(f"from {module} import (  # noqa: E402\n")
        out.extend(f"    {name},\n" for name in names)
        out.append(")\n")
        cursor = end + 1
        while cursor < len(lines) and not lines[cursor].strip():
            cursor += 1  # one blank line after an import, as ruff sorts imports
        out.append("\n")
    out.extend(lines[cursor:])
    return "".join(out)


def _raise_lines(indent: str, message: str) -> list[str]:
    """``raise NotImplementedError(message)``, wrapped to stay within LINE_LENGTH."""
    one_line = f"{indent}raise NotImplementedError({_literal(message)})\n"
    if len(one_line) <= LINE_LENGTH + 1:
        return [one_line]
    inner = indent + "    "
    width = LINE_LENGTH - len(inner) - 2
    pieces = textwrap.wrap(message, width, drop_whitespace=False, break_on_hyphens=False)
    return [
        f"{indent}raise NotImplementedError(\n",
        *(f"{inner}{_literal(piece)}\n" for piece in pieces),
        f"{indent})\n",
    ]


def _literal(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _regions(lines: list[str], path: str) -> Iterator[_Region]:
    begin: int | None = None
    for index, line in enumerate(lines):
        marker = line.strip()
        if marker == BEGIN:
            if begin is not None:
                raise MarkerError(
                    f"{path}:{index + 1}: {BEGIN} inside the region opened at line {begin + 1}"
                )
            begin = index
        elif marker == END:
            if begin is None:
                raise MarkerError(f"{path}:{index + 1}: {END} without a {BEGIN} before it")
            todos = []
            for inner in lines[begin + 1 : index]:
                if not inner.strip().startswith(TODO):
                    break
                todos.append(inner.strip()[len(TODO) :].strip())
            yield _Region(begin, index, tuple(todos))
            begin = None
        elif marker in (GIVEN_BEGIN, GIVEN_END):
            continue  # take_out_course_code's, made before the solution regions are
        elif marker.startswith(("### BEGIN", "### END")):
            raise MarkerError(
                f"{path}:{index + 1}: unrecognized marker {marker!r}; use {BEGIN!r} or {END!r}"
            )
    if begin is not None:
        raise MarkerError(f"{path}:{begin + 1}: {BEGIN} without a matching {END}")


@dataclass(frozen=True)
class _Function:
    name: str  # qualified: Class.method, outer.inner
    first: int  # 1-based line of the def (decorators excluded)
    last: int
    triton: bool


def _functions(tree: ast.AST, prefix: str = "", in_kernel: bool = False) -> Iterator[_Function]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}{node.name}"
            triton = in_kernel or any(_is_triton(d) for d in node.decorator_list)
            yield _Function(name, node.lineno, node.end_lineno or node.lineno, triton)
            yield from _functions(node, f"{name}.", triton)
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.", in_kernel)
        else:
            yield from _functions(node, prefix, in_kernel)


def _is_triton(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return ast.unparse(target) in TRITON_DECORATORS


def _enclosing(functions: list[_Function], line: int) -> tuple[str, bool]:
    """The innermost function around ``line``: its name and whether it is a Triton kernel."""
    around = [f for f in functions if f.first <= line <= f.last]
    if not around:
        return "<module>", False
    innermost = max(around, key=lambda f: f.first)
    return innermost.name, innermost.triton


# --------------------------------------------------------------------------- the whole tree


@dataclass(frozen=True)
class Copy:
    """One file the script makes: its path under exercises/, where from, and its content."""

    path: str  # exercises/...
    reference: str  # reference/...
    content: bytes
    reference_sha256: str


@dataclass(frozen=True)
class Entry:
    """The record's line for one copy: what the script wrote there, made from what."""

    sha256: str
    reference: str
    reference_sha256: str


class RecordError(ValueError):
    """The record (exercises/.generated.json) cannot be read or does not make sense."""


class UsageError(ValueError):
    """A PATH on the command line that the script does not make."""


def plan(root: Path = ROOT) -> dict[str, Copy]:
    """Every file ``exercises/`` should hold, by path relative to ``root``: a copy of each
    reference file with solution regions, and of each package ``__init__.py``."""
    copies: dict[str, Copy] = {}
    found = _reference_files(root)
    helpers = _helper_modules(found)
    for relative, raw in found.items():
        if relative.suffix != ".py" or _module_path(relative) in helpers:
            continue
        target = f"exercises/{relative.as_posix()}"
        shown = f"reference/{relative.as_posix()}"
        if target == RECORD:
            raise MarkerError(f"{shown}: this name is the script's own record; rename the file")
        given = take_out_course_code(raw.decode("utf-8"), path=shown)
        stripped = strip_solutions(given, path=shown, exercise_path=target)
        pointed = point_helper_imports(stripped, path=shown, helpers=helpers)
        copies[target] = Copy(target, shown, (header(shown) + pointed).encode("utf-8"), _sha(raw))
    return copies


def render(root: Path = ROOT) -> dict[str, bytes]:
    """Every file ``exercises/`` should hold, by path relative to ``root``, with its content."""
    return {path: copy.content for path, copy in plan(root).items()}


def solved(path: str, root: Path = ROOT) -> bytes:
    """The copy made for ``path`` (``exercises/kernels/add.py``) with its solutions left in:
    the file a learner has once every TODO is done. The tests grade it; the script never
    writes it."""
    relative = PurePosixPath(path).relative_to("exercises")
    source = f"reference/{relative.as_posix()}"
    helpers = _helper_modules(_reference_files(root))
    text = take_out_course_code((root / source).read_text(encoding="utf-8"), path=source)
    return (header(source) + point_helper_imports(text, path=source, helpers=helpers)).encode()


def helpers(root: Path = ROOT) -> dict[str, str]:
    """The course's helpers, of which no copy is made: the path under ``exercises/`` where
    each one's copy used to be -> the module the copies import instead."""
    return {
        f"exercises/{module}.py": dotted
        for module, dotted in _helper_modules(_reference_files(root)).items()
    }


def _reference_files(root: Path) -> dict[PurePosixPath, bytes]:
    reference = root / "reference"
    found = {}
    for source in sorted(reference.rglob("*")):
        relative = PurePosixPath(source.relative_to(reference).as_posix())
        if not source.is_file() or any(part in SKIPPED_PARTS for part in relative.parts):
            continue
        if source.suffix in (".pyc", ".pyo"):
            continue
        found[relative] = source.read_bytes()
    return found


def _module_path(relative: PurePosixPath) -> str:
    """``kernels/row_plan.py`` -> ``kernels/row_plan``: a module's path inside its package."""
    return relative.with_suffix("").as_posix()


def _helper_modules(found: dict[PurePosixPath, bytes]) -> dict[str, str]:
    """The reference's Python files without a solution region, ``__init__.py`` aside, by
    module path (``kernels/row_plan``) -> the module they are (``reference.kernels.row_plan``)."""
    modules = {}
    for relative, raw in found.items():
        if relative.suffix != ".py" or relative.name == "__init__.py":
            continue
        lines = raw.decode("utf-8").splitlines(keepends=True)
        if not list(_regions(lines, f"reference/{relative.as_posix()}")):
            modules[_module_path(relative)] = ".".join((REFERENCE, *relative.with_suffix("").parts))
    return modules


# --------------------------------------------------------------------------- helper imports

REFERENCE = "reference"  # the package the copies import the helpers from
LEARNER = "exercises"  # the package of the copies
# ruff sorts the course's own packages into one block of imports: a helper import, once it
# names reference.*, joins the block of learning.* imports above it (the blank line goes).
COURSE_PACKAGES = ("learning", REFERENCE)


@dataclass(frozen=True)
class HelperImport:
    """A ``from ... import`` that reads a helper: where, as written, and what to write."""

    line: int
    col: int
    level: int  # the leading dots; 0 for an absolute import (``from exercises.kernels...``)
    module: str | None  # as written after the dots
    instead: str  # the module to name: ``reference.kernels.row_plan``
    reads: tuple[str, ...]  # the helpers' module paths: ``kernels/row_plan``
    names: tuple[str, ...]  # what it imports

    def shown(self, instead: bool = False) -> str:
        """The import as written, or as it should be: ``from .row_plan import ...``."""
        module = self.instead if instead else f"{'.' * self.level}{self.module or ''}"
        names = ", ".join(self.names) if self.module is None else "..."
        return f"from {module} import {names}"


def helper_imports(tree: ast.AST, relative: PurePosixPath, helpers: dict[str, str],
                   package: str | None = None) -> list[HelperImport]:
    """Each ``from ... import`` in ``tree`` (the file at ``relative`` inside its package) that
    reads a helper, in the order of the file: the relative ones, and with ``package`` those
    that name it (``from exercises.kernels.row_plan import ...``)."""
    here = list(relative.parent.parts)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        written = node.module.split(".") if node.module else []
        if node.level == 0:
            if package is None or written[:1] != [package]:
                continue
            parts = written[1:]
        elif node.level - 1 <= len(here):
            parts = here[: len(here) - (node.level - 1)] + written
        else:
            continue
        target = "/".join(parts)
        names = [alias.name for alias in node.names]
        submodules = tuple("/".join([*parts, name]) for name in names)
        if target in helpers:
            instead, reads = helpers[target], (target,)
        elif names and all(module in helpers for module in submodules):
            instead, reads = ".".join((REFERENCE, *parts)), submodules  # from . import cooperative
        else:
            continue
        found.append(HelperImport(node.lineno, node.col_offset, node.level, node.module, instead,
                                  reads, tuple(names)))
    return sorted(found, key=lambda found_import: (found_import.line, found_import.col))


def point_helper_imports(source: str, *, path: str, helpers: dict[str, str]) -> str:
    """``source`` (the reference file at ``path``) with each relative import of a helper made
    an import from the reference (``from .row_plan import X`` becomes ``from
    reference.kernels.row_plan import X``)."""
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as error:
        raise MarkerError(f"{path}:{error.lineno}: does not parse: {error.msg}") from None
    relative = PurePosixPath(path).relative_to(REFERENCE)
    found = helper_imports(tree, relative, helpers)
    if not found:
        return source
    lines = source.splitlines(keepends=True)
    for helper in found:
        line = lines[helper.line - 1]
        dots = r"\.\s*" * helper.level
        module = r"\s*\.\s*".join(map(re.escape, (helper.module or "").split(".")))
        pattern = re.compile(r"from\s+" + dots + (module if helper.module else "") + r"(?=\s)")
        match = pattern.match(line, helper.col)
        if match is None:
            raise MarkerError(f"{path}:{helper.line}: write this import on one line, `from` "
                              "and its module together, so the copy can point it at the "
                              "reference")
        lines[helper.line - 1] = line[: match.start()] + f"from {helper.instead}" + line[
            match.end():]
        if len(lines[helper.line - 1].rstrip("\n")) > LINE_LENGTH:
            raise MarkerError(f"{path}:{helper.line}: the copy's import of {helper.instead} "
                              f"would pass {LINE_LENGTH} characters; wrap its names in "
                              "parentheses in the reference")
    dropped = _blank_lines_before_course_imports(tree, {h.line for h in found}, lines)
    return "".join(line for index, line in enumerate(lines) if index not in dropped)


def _blank_lines_before_course_imports(tree: ast.Module, rewritten: set[int],
                                       lines: list[str]) -> set[int]:
    """The blank lines between a block of the course's own imports and a helper import made
    absolute right below it (0-based indices)."""
    dropped: set[int] = set()
    for before, statement in zip(tree.body, tree.body[1:], strict=False):
        if statement.lineno not in rewritten or not isinstance(before, ast.Import | ast.ImportFrom):
            continue
        named = [a.name for a in before.names] if isinstance(before, ast.Import) else [
            before.module or ""]
        if getattr(before, "level", 0) or not all(
            name.split(".")[0] in COURSE_PACKAGES for name in named
        ):
            continue
        gap = range(before.end_lineno or before.lineno, statement.lineno - 1)
        if all(not lines[index].strip() for index in gap):
            dropped.update(gap)
    return dropped


# --------------------------------------------------------------------------- the record


RECORD = "exercises/.generated.json"
RECORD_ABOUT = (
    "Kept by scripts/make_exercises.py, do not edit: the sha256 of every copy it wrote under "
    "exercises/ and of the reference file it was made from. The script rewrites a copy only "
    "while the file still has the sha256 written here, so a file you edited is never "
    "overwritten."
)
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load_record(root: Path = ROOT) -> dict[str, Entry]:
    """The record's entries by path; empty when there is no record yet."""
    path = root / RECORD
    fix = f"restore it (`git restore {RECORD}`) or delete it (edited files then count as yours)"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RecordError(f"{RECORD} cannot be read ({error}); {fix}") from None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        raise RecordError(f"{RECORD} has no \"files\" table; {fix}")
    entries = {}
    for name, value in files.items():
        fields = value if isinstance(value, dict) else {}
        sha, source, source_sha = (fields.get(k) for k in ENTRY_KEYS)
        pure = PurePosixPath(name)
        if (
            pure.is_absolute()
            or ".." in pure.parts
            or not name.startswith("exercises/")
            or name == RECORD
            or not isinstance(source, str)
            or not all(isinstance(s, str) and _SHA256.match(s) for s in (sha, source_sha))
        ):
            raise RecordError(f"{RECORD}: the entry for {name!r} does not make sense; {fix}")
        entries[name] = Entry(sha, source, source_sha)
    return entries


ENTRY_KEYS = ("sha256", "reference", "reference_sha256")


def record_text(entries: dict[str, Entry]) -> str:
    files = {
        path: dict(zip(ENTRY_KEYS, (e.sha256, e.reference, e.reference_sha256), strict=True))
        for path, e in sorted(entries.items())
    }
    return json.dumps({"about": RECORD_ABOUT, "files": files}, indent=2) + "\n"


def _entry(copy: Copy) -> Entry:
    return Entry(_sha(copy.content), copy.reference, copy.reference_sha256)


# --------------------------------------------------------------------------- each file's state

CURRENT = "current"  # the copy as the script makes it now, recorded
UNRECORDED = "unrecorded"  # the copy as the script makes it now, but the record disagrees
MISSING = "missing"
OUT_OF_DATE = "out of date"  # unedited, and the script now makes something else
LEFT_OVER = "left over"  # unedited, and its reference file is gone or no longer copied
GONE = "gone"  # the record lists a file that is gone with its reference
YOURS = "yours"  # edited, and what the script makes has not changed since
BOTH_CHANGED = "both changed"  # edited, and what the script makes has changed since
UNKNOWN = "not recorded"  # differs from the copy, and the record has no entry for it
MOVED = "moved"  # a learner's file imports a helper from exercises/, where it is no more

RERUN = (UNRECORDED, MISSING, OUT_OF_DATE, LEFT_OVER, GONE)  # the script fixes these itself
MERGE = (BOTH_CHANGED, UNKNOWN)  # these wait for the learner


@dataclass(frozen=True)
class State:
    path: str
    kind: str
    detail: str
    copy: Copy | None
    entry: Entry | None
    on_disk: bytes | None


def states(root: Path = ROOT, only: set[str] | None = None) -> list[State]:
    """The state of every file the script makes or has recorded, and of every helper's old
    copy still on disk (or of those in ``only``)."""
    copies, record, moved = plan(root), load_record(root), helpers(root)
    listed = set(copies) | set(record) | {path for path in moved if (root / path).is_file()}
    found = []
    for path in sorted(listed):
        if only is None or path in only:
            on_disk, entry = _read(root / path), record.get(path)
            if path in moved:
                found.append(_helper_state(root, path, moved[path], entry, on_disk))
            else:
                found.append(_state(path, copies.get(path), entry, on_disk))
    return found


def _state(path: str, copy: Copy | None, entry: Entry | None, on_disk: bytes | None) -> State:
    def state(kind: str, detail: str) -> State:
        return State(path, kind, detail, copy, entry, on_disk)

    edited = on_disk is not None and (entry is None or _sha(on_disk) != entry.sha256)
    if copy is None:
        assert entry is not None  # a path is listed because it has a copy or an entry
        if on_disk is None:
            return state(GONE, f"{entry.reference} is gone, and so is the file; forget it")
        if edited:
            return state(YOURS, f"you edited it; {entry.reference} is gone, the course dropped it")
        return state(LEFT_OVER, f"{entry.reference} is gone and you have not edited the copy")
    if on_disk is None:
        return state(MISSING, f"no copy of {copy.reference} yet")
    if on_disk == copy.content:
        if entry == _entry(copy):
            return state(CURRENT, "as the script makes it")
        return state(UNRECORDED, f"{RECORD} does not record this copy yet")
    if entry is None:
        return state(UNKNOWN, f"differs from the copy of {copy.reference}, and {RECORD} has no "
                     "entry to tell whether you edited it or the reference changed")
    changed = (
        f"{copy.reference} changed since it was made"
        if entry.reference_sha256 != copy.reference_sha256
        else "scripts/make_exercises.py makes it differently now"
    )
    if not edited:
        return state(OUT_OF_DATE, f"{changed}; you have not edited it")
    if _entry(copy).sha256 == entry.sha256:
        return state(YOURS, f"you edited it; {copy.reference} has not changed since")
    return state(BOTH_CHANGED, f"you edited it, and {changed}")


def _helper_state(root: Path, path: str, module: str, entry: Entry | None,
                  on_disk: bytes | None) -> State:
    """A helper's copy, which the script made once and makes no more: gone, left over (as the
    script wrote it: removed by a run) or yours (edited: kept, and no longer recorded)."""
    def state(kind: str, detail: str) -> State:
        return State(path, kind, detail, None, entry, on_disk)

    moved = f"the course no longer copies its helper {module}: exercises import it from there"
    if on_disk is None:
        return state(GONE, f"{moved}; forget it")
    if _unedited_helper(root, path, entry, on_disk):
        return state(LEFT_OVER, f"{moved}, and you have not edited this copy")
    return state(YOURS, f"you edited it; {moved}, so only an import of yours still reads it")


def _unedited_helper(root: Path, path: str, entry: Entry | None, on_disk: bytes | None) -> bool:
    """Is the helper's copy at ``path`` missing, or as the script once wrote it: the recorded
    sha256, or the reference file as it is under the copy's header?"""
    if on_disk is None:
        return True
    source = path.replace(f"{LEARNER}/", f"{REFERENCE}/", 1)
    old_copy = header(source).encode("utf-8") + (_read(root / source) or b"")
    return on_disk == old_copy or (entry is not None and _sha(on_disk) == entry.sha256)


def moved_imports(root: Path = ROOT, only: set[str] | None = None) -> list[str]:
    """One line for each import, in a Python file under ``exercises/`` (or in ``only``), that
    reads a helper from ``exercises/`` while the helper's copy there is gone or as the script
    wrote it (a run removes it): where it is, and the import to write instead."""
    moved, record = helpers(root), load_record(root)
    going = {path for path in moved
             if _unedited_helper(root, path, record.get(path), _read(root / path))}
    modules = _helper_modules(_reference_files(root))
    ours = {s.path for s in states(root) if s.kind in (CURRENT, UNRECORDED, OUT_OF_DATE)}
    lines = []
    for file in sorted((root / LEARNER).rglob("*.py")):
        relative = file.relative_to(root / LEARNER)
        path = f"{LEARNER}/{relative.as_posix()}"
        if any(part in SKIPPED_PARTS for part in relative.parts) or path in {*moved, *ours}:
            continue  # a helper's copy, or a copy the script (re)writes
        if only is not None and path not in only:
            continue
        try:
            tree = ast.parse(file.read_bytes(), filename=path)
        except (SyntaxError, ValueError):
            continue  # the checker says what is wrong with it; no import of it can run
        for found in helper_imports(tree, PurePosixPath(relative.as_posix()), modules, LEARNER):
            if not any(f"{LEARNER}/{module}.py" in going for module in found.reads):
                continue
            lines.append(
                f"{MOVED}: {path}:{found.line}: `{found.shown()}` reads a helper the course no "
                f"longer copies into {LEARNER}/; write `{found.shown(instead=True)}` there "
                "instead (the script does not change your file)"
            )
    return lines


# --------------------------------------------------------------------------- what to do

SCRIPT = "python scripts/make_exercises.py"


def check(root: Path, only: set[str] | None) -> int:
    """Print what is out of date, one line a file, and how to fix it; change nothing."""
    found = states(root, only)
    moved = moved_imports(root, only)
    listed = [s for s in found if s.kind != CURRENT]
    for s in listed:
        print(f"{s.kind}: {s.path} ({s.detail})")
    print(*moved, sep="\n", end="\n" if moved else "")
    rerun = [s for s in listed if s.kind in RERUN]
    merge = [s for s in listed if s.kind in MERGE]
    yours = [s for s in listed if s.kind == YOURS and s.copy is not None]
    if rerun:
        print(f"run `{SCRIPT}` to bring these up to date (it never overwrites a file you edited)")
    for s in merge:
        print(f"to merge {s.path}: `{SCRIPT} --diff {s.path}` shows your file against the new "
              f"copy; carry the course's changes into yours, or take the new copy with "
              f"`{SCRIPT} --force {s.path}` (yours is kept as a dated .bak beside it)")
    if yours:
        print(f"your edited files are fine as they are; `{SCRIPT} --diff PATH` shows one "
              "against the copy the script makes now")
    if merge or moved:
        return EXIT_MERGE
    if rerun:
        return EXIT_RERUN
    print(f"exercises/ is up to date ({len(found) - len(listed)} copies as made"
          + (f", {len(yours)} edited by you)" if yours else ")"))
    return EXIT_OK


def write(root: Path, only: set[str] | None, force: bool, now: datetime | None = None) -> int:
    """Make what is missing or out of date; keep every edited file unless ``force``."""
    found = states(root, only)
    record = load_record(root)
    before = dict(record)
    waiting = 0
    try:
        for s in found:
            target = root / s.path
            if s.kind in (MISSING, OUT_OF_DATE) or (force and s.copy and s.kind in (YOURS, *MERGE)):
                backup = None
                if s.kind in (YOURS, *MERGE):
                    backup = _backup(target, s.on_disk, now or datetime.now())
                _write(target, s.copy.content)
                record[s.path] = _entry(s.copy)
                kept = f" (yours is now {backup.relative_to(root).as_posix()})" if backup else ""
                print(f"wrote {s.path}{kept}")
            elif s.kind == UNRECORDED:
                record[s.path] = _entry(s.copy)
            elif s.kind == LEFT_OVER:
                target.unlink()
                record.pop(s.path, None)
                print(f"removed {s.path} ({s.detail})")
            elif s.kind == GONE or (s.kind == YOURS and s.copy is None):
                record.pop(s.path, None)
                if s.on_disk is not None:
                    print(f"kept {s.path}: {s.detail}; it is yours and no longer recorded")
            elif s.kind == YOURS:
                print(f"kept {s.path}: {s.detail}")
            elif s.kind in MERGE:
                waiting += 1
                print(f"kept {s.path}: {s.detail}; `{SCRIPT} --diff {s.path}` shows what to "
                      f"merge, `--force {s.path}` takes the new copy and keeps yours as a backup")
    finally:
        if record != before or not (root / RECORD).exists():
            _write(root / RECORD, record_text(record).encode("utf-8"))
            print(f"updated {RECORD}, the record of what the script wrote")
    moved = moved_imports(root, only)
    print(*moved, sep="\n", end="\n" if moved else "")
    if all(s.kind == CURRENT for s in found) and not moved:
        print("exercises/ is up to date")
    return EXIT_MERGE if waiting or moved else EXIT_OK


def _backup(target: Path, content: bytes | None, now: datetime) -> Path:
    """Copy the learner's file to ``<name>.<YYYY-MM-DDTHHMM>[-N].bak``; never overwrite one."""
    assert content is not None
    stamp = now.strftime("%Y-%m-%dT%H%M")
    for number in range(1, 1000):
        suffix = "" if number == 1 else f"-{number}"
        backup = target.with_name(f"{target.name}.{stamp}{suffix}.bak")
        try:
            with open(backup, "xb") as stream:  # "x": fails if the name is taken
                stream.write(content)
                stream.flush()
                os.fsync(stream.fileno())
        except FileExistsError:
            continue
        return backup
    raise OSError(f"{target}: a thousand backups named {stamp} already; move some away")


def _write(path: Path, content: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _targets(root: Path, texts: list[str]) -> set[str] | None:
    """The PATHs given, relative to ``root``; each must be a file the script makes or records."""
    if not texts:
        return None
    known = set(plan(root)) | set(load_record(root)) | set(helpers(root))
    chosen = set()
    for text in texts:
        given = Path(text)
        candidates = [given] if given.is_absolute() else [Path.cwd() / given, root / given]
        relative = None
        for candidate in candidates:
            try:
                relative = candidate.resolve().relative_to(root.resolve()).as_posix()
                break
            except ValueError:
                continue
        if relative not in known:
            raise UsageError(f"{text}: not a file this script makes (it copies reference/ into "
                             "exercises/, e.g. exercises/kernels/add.py)")
        chosen.add(relative)
    return chosen


def _show(root: Path, text: str, diff: bool) -> int:
    (path,) = _targets(root, [text]) or ()
    copy = plan(root).get(path)
    moved = helpers(root).get(path)
    if moved is not None:
        raise UsageError(f"{text}: the course no longer copies this helper; exercises import "
                         f"it from {moved}")
    if copy is None:
        raise UsageError(f"{text}: its reference file is gone; the script makes no copy of it")
    if not diff:
        sys.stdout.buffer.write(copy.content)
        return EXIT_OK
    yours = _read(root / path)
    if yours is None:
        raise UsageError(f"{text}: there is no such file yet; `{SCRIPT} {path}` makes it")
    lines = difflib.unified_diff(
        yours.decode("utf-8", "replace").splitlines(keepends=True),
        copy.content.decode("utf-8", "replace").splitlines(keepends=True),
        f"{path} (yours)",
        f"{path} (the copy made from {copy.reference} now)",
    )
    sys.stdout.writelines(lines)
    return EXIT_OK


EXIT_OK, EXIT_RERUN, EXIT_ERROR, EXIT_MERGE = 0, 1, 2, 3


def main(argv: list[str] | None = None, root: Path = ROOT, now: datetime | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=SCRIPT.removeprefix("python "),
        description=__doc__.splitlines()[0],
        epilog="exit status: 0 nothing left to do (files you edited are yours and fine); "
        "1 (--check) some copies are out of date and rerunning the script brings them up to "
        "date; 2 an error (nothing changed); 3 a file you edited needs merging with a newer "
        "copy (--diff PATH shows how, --force PATH takes the copy and keeps yours as a backup), "
        "or imports a helper from exercises/ that the course now keeps in reference/ only",
    )
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="only these files (default: all of exercises/)"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="change nothing; say what is stale")
    mode.add_argument(
        "--force",
        action="store_true",
        help="also replace files you edited, each first copied to PATH.<date>.bak beside it",
    )
    mode.add_argument("--stub", metavar="PATH", help="print the copy made for PATH now")
    mode.add_argument("--diff", metavar="PATH", help="show PATH against the copy made now")
    args = parser.parse_args(argv)
    try:
        if args.stub or args.diff:
            if args.paths:
                raise UsageError("--stub and --diff take one PATH and no others")
            return _show(root, args.stub or args.diff, diff=bool(args.diff))
        only = _targets(root, args.paths)
        if args.check:
            return check(root, only)
        return write(root, only, args.force, now)
    except (MarkerError, RecordError, UsageError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    raise SystemExit(main())
