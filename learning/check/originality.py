"""Is a learner's kernel the course's own, copied? The reference kernels hold the answers.

``reference/`` ships with the course: its kernels are what a learner's kernel is timed against,
and the exercises are made from them by taking out their solution regions (the lines between
``### BEGIN SOLUTION`` and ``### END SOLUTION``). So the answer to every kernel exercise is in
the learner's own clone, and a copy of it runs, passes every replay and is as fast as the
reference, because it is the reference. Nothing a replay measures can tell the two apart; the
source can.

A **solution kernel** is a ``@...jit`` function of a reference file that holds a solution
region. A learner's decorated function (Triton launches only decorated functions, and a kernel
calls only those: the checker's replay refuses any other) is a copy of one when the two are
the same code once everything that does not change what the code does, or only its look, is
set aside:

* comments, docstrings and every other string statement, and the layout;
* padding that does nothing: ``pass``, a bare constant, an assignment to names the function
  never reads whose value calls nothing (``spare = 0``);
* the decorators (``@triton.jit(do_not_specialize=...)`` or not, the body does the work);
* every name the function binds or reads (its own name, its parameters, its locals, the
  modules and globals it reaches, ``tl`` included), each replaced by its order of first
  appearance, so a consistent renaming changes nothing. Attribute names (``.load``, ``.to``),
  keyword names (``mask=``), constants and the structure stay.

Two people who write a kernel of two hundred syntax nodes independently do not write it node
for node alike with the same constants; a copy that was renamed, reformatted or stripped of
its comments or padded with statements that do nothing still is. What this does not catch,
and does not try to: a copy edited in what it does (a statement that does something added,
moved or changed). That is partly the learner's own work, and a question for a person, as is
any other resemblance.

Only the standard library and the course's manifest are used; sources are parsed, never run.
"""

from __future__ import annotations

import ast
import copy
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

BEGIN = "### BEGIN SOLUTION"  # scripts/make_exercises.py's marker of a solution region
MAX_SOURCE_CHARS = 2_000_000  # a learner file larger than this is not parsed


@dataclass(frozen=True)
class Solution:
    """A reference kernel that holds a solution region."""

    path: str  # reference/kernels/add.py, relative to the course root
    name: str  # _add_kernel
    line: int  # of its def
    size: int = 0  # the nodes of its canonical form (_size)
    attributes: tuple[tuple[str, int], ...] = ()  # each attribute name it reads, and how often


@dataclass(frozen=True)
class Copy:
    """A learner's function that is a solution kernel, copied."""

    path: str  # as the caller named the learner's file (kernels/add.py, exercises/...)
    name: str
    solution: Solution

    def __str__(self) -> str:
        theirs = self.solution
        renamed = "" if self.name == theirs.name else f" (renamed {self.name})"
        return (f"{self.path}: {self.name} is the course's {theirs.name} from {theirs.path} "
                f"(line {theirs.line}){renamed}, the same code once names, comments, docstrings "
                "and layout are set aside")  # fmt: skip


def _is_jit(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
    return name == "jit"


class _Canonical(ast.NodeTransformer):
    """Names numbered by first appearance; decorators and string statements dropped."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def _name(self, text: str) -> str:
        return self.names.setdefault(text, f"n{len(self.names)}")

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name = self._name(node.name)
        node.decorator_list = []
        node.type_comment = None
        self.generic_visit(node)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815 (ast.NodeTransformer's naming)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg = self._name(node.arg)
        node.type_comment = None
        self.generic_visit(node)
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self._name(node.id)
        return node

    def visit_Expr(self, node: ast.Expr) -> ast.AST | None:
        if isinstance(node.value, ast.Constant):
            return None  # a docstring, a string used as a comment, a bare number or ``...``
        self.generic_visit(node)
        return node

    def visit_Pass(self, node: ast.Pass) -> None:
        return None


def _without_dead_stores(function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    """Drop, in place, every assignment to names the function never reads whose value calls
    nothing (``spare = 0``, ``unused = x + 1``): padding that changes nothing a kernel does.
    Again until none is left, since a dropped value may have been another name's only read."""
    while True:
        read = {n.id for n in ast.walk(function)
                if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store)}  # fmt: skip
        dropped = False
        for node in ast.walk(function):
            for field in ("body", "orelse", "finalbody"):
                statements = getattr(node, field, None)
                if not isinstance(statements, list):
                    continue
                kept = [s for s in statements if not _dead_store(s, read)]
                if len(kept) != len(statements):
                    setattr(node, field, kept)
                    dropped = True
        if not dropped:
            return


def _dead_store(statement: ast.stmt, read: set[str]) -> bool:
    if isinstance(statement, ast.Assign):
        targets, value = statement.targets, statement.value
    elif isinstance(statement, ast.AnnAssign | ast.AugAssign):
        targets, value = [statement.target], statement.value
    else:
        return False
    names = [n for t in targets for n in ast.walk(t)]
    return (
        value is not None
        and all(isinstance(n, ast.Name | ast.Tuple | ast.List | ast.Store) for n in names)
        and not any(n.id in read for n in names if isinstance(n, ast.Name))
        and not any(isinstance(n, ast.Call | ast.Await | ast.Yield | ast.YieldFrom | ast.NamedExpr)
                    for n in ast.walk(value))  # fmt: skip
    )


def _cleaned(function: ast.FunctionDef | ast.AsyncFunctionDef):
    """A copy of ``function`` without its dead stores."""
    function = copy.deepcopy(function)
    _without_dead_stores(function)
    return function


def canonical(function: ast.FunctionDef | ast.AsyncFunctionDef, *, in_place: bool = False) -> str:
    """The form two copies of a function share (see the module docstring). ``in_place``: the
    tree may be changed (it is not used again), which saves copying it."""
    function = function if in_place else copy.deepcopy(function)
    _without_dead_stores(function)
    return ast.dump(_Canonical().visit(function))


def _size(function: ast.FunctionDef | ast.AsyncFunctionDef, limit: int | None = None) -> int:
    """How many nodes the canonical form keeps: the same for a copy, however renamed, and a
    cheap way to pass over the functions that cannot be one (counting stops past ``limit``)."""
    count, stack = 0, [function.args, *function.body]
    while stack and (limit is None or count <= limit):
        node = stack.pop()
        if isinstance(node, ast.Pass) or (
            isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        ):  # fmt: skip
            continue
        count += 1
        stack.extend(ast.iter_child_nodes(node))
    return count


def _functions(tree: ast.AST) -> Iterable[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The functions a module defines where Triton can launch them from: at its top level,
    in a class, or under an ``if``/``try``/``with`` there (never inside another function, where
    no kernel can be defined and launched)."""
    stack = list(reversed(getattr(tree, "body", [])))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node
        elif isinstance(node, ast.stmt):
            inner = [child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt)]
            inner += [s for h in getattr(node, "handlers", ()) for s in h.body]
            stack.extend(reversed(inner))


# An attribute's name as the source can spell it: after the dot, blanks, line continuations
# and (inside brackets) comments may come first.
_ATTRIBUTE = re.compile(r"\.(?:\s|\\\n|#[^\n]*)*([^\W\d]\w*)")


def _may_hold(source: str, known: Iterable[Solution]) -> bool:
    """Whether ``source`` can hold a copy of any of ``known``, from its text alone: a copy reads
    every attribute name its original reads, at least as often (counted here over the whole
    text, strings and comments too, after Python's own NFKC folding of identifiers, so the
    count is never short). Parsing is what costs; most files are passed over here."""
    found = Counter(_ATTRIBUTE.findall(unicodedata.normalize("NFKC", source)))
    return any(all(found[name] >= count for name, count in solution.attributes)
               for solution in known)  # fmt: skip


def _parse(source: str) -> ast.Module | None:
    if len(source) > MAX_SOURCE_CHARS:
        return None
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


@lru_cache(maxsize=8)
def _solutions(root: Path, paths: tuple[str, ...], stamps: tuple) -> dict[str, Solution]:
    del stamps  # part of the cache key only: a reference file edited since is read again
    found: dict[str, Solution] = {}
    for path in paths:
        source = (root / path).read_text(encoding="utf-8")
        lines = source.splitlines()
        tree = _parse(source)
        for function in _functions(tree) if tree else ():
            body = lines[function.lineno - 1 : function.end_lineno]
            if any(map(_is_jit, function.decorator_list)) and any(
                line.strip() == BEGIN for line in body
            ):  # fmt: skip
                attributes = Counter(n.attr for part in (function.args, *function.body)
                                     for n in ast.walk(part)
                                     if isinstance(n, ast.Attribute))  # fmt: skip
                solution = Solution(path, function.name, function.lineno,
                                    _size(_cleaned(function)),
                                    tuple(sorted(attributes.items())))  # fmt: skip
                found.setdefault(canonical(function), solution)
    return found


def solutions(root: Path | None = None, course=None) -> dict[str, Solution]:
    """Every solution kernel of the course at ``root`` (the checker's by default), by its
    canonical form: those of every reference file an exercise of ``course`` (that course's
    manifest by default) names."""
    from learning import manifest

    root = Path(root) if root is not None else manifest.ROOT
    course = course if course is not None else manifest.load(root / "course_manifest.toml")
    paths = sorted({path for e in course.exercises.values() for path in e.reference
                    if path.endswith(".py") and (root / path).is_file()})  # fmt: skip
    stamps = tuple((root / path).stat().st_mtime_ns for path in paths)
    return _solutions(root.resolve(), tuple(paths), stamps)


def _reached(trees: Mapping[str, ast.Module], start: Iterable[str]) -> set[tuple[str, str]]:
    """``start``'s functions (``"<path>::<name>"``) and every function of ``trees`` they name,
    again and again: a kernel's jit helpers, wherever they are defined (looked up by name)."""
    defined: dict[str, list[tuple[str, ast.AST]]] = {}
    for path, tree in trees.items():
        for function in _functions(tree):
            defined.setdefault(function.name, []).append((path, function))
    seen: set[tuple[str, str]] = set()
    queue = [tuple(key.partition("::")[::2]) for key in start]
    while queue:
        path, name = queue.pop()
        if (path, name) in seen:
            continue
        seen.add((path, name))
        for where, function in defined.get(name, ()):
            if where != path:
                continue
            for node in ast.walk(function):
                named = node.id if isinstance(node, ast.Name) else (
                    node.attr if isinstance(node, ast.Attribute) else None)  # fmt: skip
                queue += [(other, named) for other, _ in defined.get(named, ())]
    return seen


def reached(sources: Mapping[str, str], start: Iterable[str]) -> set[tuple[str, str]]:
    """``start``'s functions (``"<path>::<name>"``) of ``sources`` (path -> text) and every
    function they name, again and again, as ``(path, name)``."""
    trees = {path: tree for path, source in sources.items()
             if (tree := _parse(source)) is not None}  # fmt: skip
    return _reached(trees, start)


def copies(sources: Mapping[str, str], known: Mapping[str, Solution],
           only: Iterable[str] | None = None) -> list[Copy]:  # fmt: skip
    """The functions of ``sources`` (path -> text) that are copies of ``known`` solutions.

    ``only``: look at these functions (each ``"<path>::<name>"``: the kernels a trace
    launched) and at the functions they call, by name, in any of the sources; at every
    function of every source when None."""
    trees = {path: tree for path, source in sorted(sources.items())
             if (only is not None or _may_hold(source, known.values()))
             and (tree := _parse(source)) is not None}  # fmt: skip
    wanted = _reached(trees, only) if only is not None else None
    sizes = {solution.size for solution in known.values()}
    found: list[Copy] = []
    for path, tree in trees.items():
        for function in list(_functions(tree)):
            if not function.decorator_list:
                continue  # Triton launches, and kernels call, only decorated functions
            if wanted is not None and (path, function.name) not in wanted:
                continue
            name = function.name
            function = _cleaned(function)
            if sizes and _size(function, max(sizes)) not in sizes:
                continue
            solution = known.get(canonical(function, in_place=True))
            if solution is not None:
                found.append(Copy(path, name, solution))
    return found
