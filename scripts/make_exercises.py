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
gone), ``unrecorded`` / ``not recorded`` (the record lacks the file).

Exit status: 0 nothing to do (edited files are yours and fine); 1 (``--check``) rerunning the
script would bring every file listed up to date; 2 an error, with nothing changed (markers
that do not pair up, a damaged record, a PATH the script does not make); 3 a file you edited
waits to be merged with a newer copy.

Every file under ``reference/`` gets a copy under ``exercises/`` at the same relative path.
A Python file's solution regions are replaced; everything else, ``__init__.py`` included, is
copied as it is (so ``exercises/__init__.py`` selects the Triton backend like the reference's).
Each Python copy starts with a header comment saying where it came from.

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
    """Every file ``exercises/`` should hold, by path relative to ``root``."""
    reference = root / "reference"
    copies: dict[str, Copy] = {}
    for source in sorted(reference.rglob("*")):
        relative = source.relative_to(reference)
        if not source.is_file() or any(part in SKIPPED_PARTS for part in relative.parts):
            continue
        if source.suffix in (".pyc", ".pyo"):
            continue
        target = f"exercises/{relative.as_posix()}"
        shown = f"reference/{relative.as_posix()}"
        if target == RECORD:
            raise MarkerError(f"{shown}: this name is the script's own record; rename the file")
        raw = source.read_bytes()
        if source.suffix == ".py":
            stripped = strip_solutions(raw.decode("utf-8"), path=shown, exercise_path=target)
            content = (header(shown) + stripped).encode("utf-8")
        else:
            content = raw
        copies[target] = Copy(target, shown, content, _sha(raw))
    return copies


def render(root: Path = ROOT) -> dict[str, bytes]:
    """Every file ``exercises/`` should hold, by path relative to ``root``, with its content."""
    return {path: copy.content for path, copy in plan(root).items()}


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
LEFT_OVER = "left over"  # unedited, and its reference file is gone
GONE = "gone"  # the record lists a file that is gone with its reference
YOURS = "yours"  # edited, and what the script makes has not changed since
BOTH_CHANGED = "both changed"  # edited, and what the script makes has changed since
UNKNOWN = "not recorded"  # differs from the copy, and the record has no entry for it

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
    """The state of every file the script makes or has recorded (or of those in ``only``)."""
    copies, record = plan(root), load_record(root)
    found = []
    for path in sorted(set(copies) | set(record)):
        if only is None or path in only:
            found.append(_state(path, copies.get(path), record.get(path), _read(root / path)))
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


# --------------------------------------------------------------------------- what to do

SCRIPT = "python scripts/make_exercises.py"


def check(root: Path, only: set[str] | None) -> int:
    """Print what is out of date, one line a file, and how to fix it; change nothing."""
    found = states(root, only)
    listed = [s for s in found if s.kind != CURRENT]
    for s in listed:
        print(f"{s.kind}: {s.path} ({s.detail})")
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
    if merge:
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
                del record[s.path]
                print(f"removed {s.path} ({s.detail})")
            elif s.kind == GONE or (s.kind == YOURS and s.copy is None):
                del record[s.path]
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
    if all(s.kind == CURRENT for s in found):
        print("exercises/ is up to date")
    return EXIT_MERGE if waiting else EXIT_OK


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
    known = set(plan(root)) | set(load_record(root))
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
        "copy (--diff PATH shows how, --force PATH takes the copy and keeps yours as a backup)",
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
