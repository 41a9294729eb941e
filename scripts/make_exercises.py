"""Make ``exercises/`` from ``reference/``: the learner's copies, with the solutions taken out.

    python scripts/make_exercises.py           write exercises/ (files that changed only)
    python scripts/make_exercises.py --check   exit 1, naming the files, if exercises/ is stale

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
import json
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

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


def render(root: Path = ROOT) -> dict[str, bytes]:
    """Every file ``exercises/`` should hold, by path relative to ``root``, with its content."""
    reference = root / "reference"
    files: dict[str, bytes] = {}
    for source in sorted(reference.rglob("*")):
        relative = source.relative_to(reference)
        if not source.is_file() or any(part in SKIPPED_PARTS for part in relative.parts):
            continue
        if source.suffix in (".pyc", ".pyo"):
            continue
        target = f"exercises/{relative.as_posix()}"
        if source.suffix == ".py":
            text = source.read_text(encoding="utf-8")
            shown = f"reference/{relative.as_posix()}"
            stripped = strip_solutions(text, path=shown, exercise_path=target)
            files[target] = (header(shown) + stripped).encode("utf-8")
        else:
            files[target] = source.read_bytes()
    return files


def out_of_date(root: Path = ROOT) -> list[str]:
    """Paths under exercises/ that differ from what the script would write, or are left over."""
    expected = render(root)
    stale = [path for path, content in expected.items() if _read(root / path) != content]
    for copy in sorted((root / "exercises").rglob("*.py")):
        relative = copy.relative_to(root).as_posix()
        if relative not in expected and _read(copy).startswith(b"# Your copy of reference/"):
            stale.append(f"{relative} (its reference file is gone)")
    return stale


def write(root: Path = ROOT) -> list[str]:
    """Write the files that differ; return their paths."""
    written = []
    for path, content in render(root).items():
        target = root / path
        if _read(target) != content:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            written.append(path)
    return written


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if exercises/ is out of date"
    )
    args = parser.parse_args(argv)
    try:
        if args.check:
            stale = out_of_date(root)
            for path in stale:
                print(f"out of date: {path}")
            if stale:
                print("run `python scripts/make_exercises.py` to bring exercises/ up to date")
                return 1
            print("exercises/ is up to date")
            return 0
        for path in write(root):
            print(f"wrote {path}")
    except MarkerError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
