"""Which source files could a module have executed? Its static import closure, read by AST.

Two readers use it: the grader (below) and the binding of recorded cases to code
(:mod:`learning.report.binding`), which reads a report's measured sources through
:class:`Sources` instead of the live files.

A report's fingerprint is written by the learner's own copy of the engine, which lists the
modules a run loaded. The grader does not take that list on its word: it reads the SUBMITTED
sources and follows every import of the graded module that stays inside the learner's package
(``exercises``), including imports inside functions and ``if`` blocks, since any of them could
have run. Each file reached must be in the fingerprint, with the submitted file's hash.

Code loaded any other way (``exec``, ``eval``, ``compile``, ``__import__``, ``importlib``,
``runpy``, a ``.py`` file opened and read) has no file for a fingerprint to name, so each use is
reported as :class:`Dynamic`: no fingerprint can cover it.

:func:`module_level_closure` is the strict variant for the engine: only imports at a module's
top level, outside ``if``/``try`` blocks, which every run executes. The grader requires those
engine files in every learner report's fingerprint.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

MAX_SOURCE_BYTES = 2 * 10**6  # a learner module larger than this is not parsed

# Calls that run code no file holds: a bare name ...
_DYNAMIC_BUILTINS = {"exec", "eval", "compile", "__import__", "execfile", "breakpoint"}
# ... an attribute (importlib.import_module, loader.exec_module, runpy.run_path, ...) ...
_DYNAMIC_ATTRIBUTES = {
    "import_module",
    "exec_module",
    "load_module",
    "spec_from_file_location",
    "spec_from_loader",
    "module_from_spec",
    "SourceFileLoader",
    "SourcelessFileLoader",
    "run_path",
    "run_module",
    "reload",
    "__import__",
    "FunctionType",
    "CodeType",
}
# ... or a module whose purpose is loading code.
_DYNAMIC_MODULES = {"importlib", "runpy", "imp", "marshal", "zipimport", "pkgutil", "builtins"}
_READS = {"open", "read_text", "read_bytes", "read", "open_text", "open_binary", "files"}
_MAYBE_DYNAMIC = re.compile(
    rb"\b(?:"
    + b"|".join(
        re.escape(word.encode())
        for word in sorted(
            _DYNAMIC_BUILTINS | _DYNAMIC_ATTRIBUTES | _DYNAMIC_MODULES | {"__builtins__", "getattr"}
        )
    )
    + rb""")\b|\.py[cw]?["']"""  # a word of a loader, or a string ending in .py
)


_DOCUMENTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Dynamic:
    """One place where a learner file loads code that no fingerprint can name."""

    path: str  # repository-relative, e.g. exercises/kernels/add.py
    line: int
    what: str  # e.g. "exec(...)"

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


@dataclass
class Closure:
    files: set[str] = field(default_factory=set)  # repository-relative paths that exist
    dynamic: list[Dynamic] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # files that could not be parsed


def _package_of(module: str, path: str) -> str:
    return module if path.endswith("__init__.py") else module.rpartition(".")[0]


def _resolve(node: ast.ImportFrom, module: str, path: str) -> str | None:
    if not node.level:
        return node.module
    parts = _package_of(module, path).split(".")
    if node.level - 1 > len(parts) - 1:
        return None
    base = parts[: len(parts) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _imported(node: ast.AST, module: str, path: str) -> list[str]:
    """Every module name an import statement can load (parents included)."""
    names: list[str] = []
    if isinstance(node, ast.Import):
        for alias in node.names:
            parts = alias.name.split(".")
            names += [".".join(parts[: i + 1]) for i in range(len(parts))]
    elif isinstance(node, ast.ImportFrom):
        base = _resolve(node, module, path)
        if base:
            parts = base.split(".")
            names += [".".join(parts[: i + 1]) for i in range(len(parts))]
            names += [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]
    return names


def _dynamic_uses(tree: ast.AST, path: str) -> list[Dynamic]:
    found = []
    for node in ast.walk(tree):
        what = None
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules.append(node.module)
            hit = [m for m in modules if m.split(".")[0] in _DYNAMIC_MODULES]
            if hit:
                what = f"imports {hit[0]}"
        elif isinstance(node, ast.Name) and node.id == "__builtins__":
            what = "uses __builtins__"
        elif isinstance(node, ast.Call):
            function = node.func
            if isinstance(function, ast.Name) and function.id in _DYNAMIC_BUILTINS:
                what = f"{function.id}(...)"
            elif isinstance(function, ast.Attribute) and function.attr in _DYNAMIC_ATTRIBUTES:
                what = f"{ast.unparse(function)}(...)"
            elif _names_getattr_of_dynamic(node):
                what = ast.unparse(node)[:80]
            elif _reads_python_source(node):
                what = f"reads a Python file: {ast.unparse(node)[:80]}"
        if what:
            found.append(Dynamic(path, getattr(node, "lineno", 0), what))
    return found


def _names_getattr_of_dynamic(call: ast.Call) -> bool:
    """``getattr(anything, "exec")`` and the like."""
    if not (isinstance(call.func, ast.Name) and call.func.id == "getattr" and len(call.args) > 1):
        return False
    name = call.args[1]
    return isinstance(name, ast.Constant) and name.value in _DYNAMIC_BUILTINS | _DYNAMIC_ATTRIBUTES


def _reads_python_source(call: ast.Call) -> bool:
    function = call.func
    name = function.id if isinstance(function, ast.Name) else getattr(function, "attr", None)
    if name not in _READS:
        return False
    return any(
        isinstance(sub, ast.Constant)
        and isinstance(sub.value, str)
        and sub.value.rstrip().endswith((".py", ".pyc", ".pyw"))
        for sub in ast.walk(call)
    )


@dataclass(frozen=True)
class _Analysis:
    imports: tuple[str, ...]  # every module name an import anywhere in the file can load
    top_level: tuple[str, ...]  # those of top-level import statements only
    dynamic: tuple[Dynamic, ...]


# A class's files are mostly the same helpers: each distinct content is parsed once.
_ANALYSES: dict[tuple[str, str, str], _Analysis | None] = {}


def _analyse(source: bytes | None, module: str, path: str) -> _Analysis | None:
    """The file's imports and dynamic loads; None when it cannot be parsed (or was not read)."""
    if source is None:
        return None
    key = (hashlib.sha256(source).hexdigest(), module, path)
    if key not in _ANALYSES:
        _ANALYSES[key] = _parse_and_analyse(source, module, path)
    return _ANALYSES[key]


def _parse_and_analyse(source: bytes, module: str, path: str) -> _Analysis | None:
    if len(source) > MAX_SOURCE_BYTES:
        return None
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    imports = [n for node in _statements(tree.body) if isinstance(node, ast.Import | ast.ImportFrom)
               for n in _imported(node, module, path)]  # fmt: skip
    top_level = [n for node in _top_level_imports(tree) for n in _imported(node, module, path)]
    # A file with none of the words a dynamic load needs (outside its docstrings, which name
    # them in prose) is not walked expression by expression.
    suspect = _MAYBE_DYNAMIC.search(_without_docstrings(source, tree))
    dynamic = _dynamic_uses(tree, path) if suspect else []
    return _Analysis(tuple(imports), tuple(top_level), tuple(dynamic))


def _without_docstrings(source: bytes, tree: ast.Module) -> bytes:
    """``source`` with each docstring's bytes blanked (AST offsets are UTF-8 byte offsets)."""
    lines = source.splitlines(keepends=True)
    owners = [tree, *(n for n in _statements(tree.body) if isinstance(n, _DOCUMENTED))]
    for owner in owners:
        body = getattr(owner, "body", None)
        first = body[0] if body else None
        if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)):  # fmt: skip
            continue
        start, end = first.lineno - 1, first.end_lineno - 1
        for number in range(start, end + 1):
            line = lines[number]
            left = first.col_offset if number == start else 0
            right = first.end_col_offset if number == end else len(line.rstrip(b"\r\n"))
            lines[number] = line[:left] + b" " * (right - left) + line[right:]
    return b"".join(lines)


def _statements(body: list[ast.stmt]):
    """Every statement, nested ones included (imports are statements: no need to visit the
    expressions, which are most of a file's nodes)."""
    for node in body:
        yield node
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            inner = getattr(node, name, None)
            if isinstance(inner, list):
                yield from _statements(inner)


def _top_level_imports(tree: ast.Module) -> list[ast.AST]:
    return [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]


class Sources:
    """Where a closure reads files: a folder's live files, or any other store of them.

    ``exists(path)`` says whether a module's file is there (``reference/kernels/add.py``);
    ``read(path)`` gives its bytes, or None when they cannot be had. The validator reads a
    report's measured sources this way (its snapshots, or the files while unchanged).
    """

    def __init__(self, root: Path):
        self.root = Path(root)

    def exists(self, path: str) -> bool:
        return (self.root / path).is_file()

    def read(self, path: str) -> bytes | None:
        try:
            return (self.root / path).read_bytes()
        except OSError:
            return None


def _module_path(sources: Sources, module: str) -> str | None:
    base = module.replace(".", "/")
    for candidate in (f"{base}.py", f"{base}/__init__.py"):
        if sources.exists(candidate):
            return candidate
    return None


def closure(
    sources: Sources, modules: Iterable[str], packages: Iterable[str], strict: bool = False
) -> Closure:
    """Every file of ``packages`` that ``modules`` could have executed (``strict``: that
    importing them always executes, top-level imports only), and, when not strict, every
    place in those files where code is loaded dynamically."""
    packages = frozenset(packages)
    result = Closure()
    pending = list(modules)
    seen: set[str] = set()
    while pending:
        module = pending.pop()
        if module in seen or module.split(".")[0] not in packages:
            continue
        seen.add(module)
        parts = module.split(".")
        pending += [".".join(parts[:i]) for i in range(1, len(parts))]  # parents' __init__
        path = _module_path(sources, module)
        if path is None:
            continue  # a name imported from a module, not a module of its own
        result.files.add(path)
        analysis = _analyse(sources.read(path), module, path)
        if analysis is None:
            result.unreadable.append(path)
            continue
        pending += analysis.top_level if strict else analysis.imports
        if not strict:
            result.dynamic += analysis.dynamic
    return result


def import_closure(root: Path, modules: Iterable[str], package: str) -> Closure:
    """Every file of ``package`` under ``root`` that ``modules`` could have executed, and every
    place in those files where code is loaded dynamically."""
    return closure(Sources(root), modules, [package])


def module_level_closure(root: Path, modules: Iterable[str], package: str) -> set[str]:
    """The files of ``package`` that importing ``modules`` always executes: top-level imports
    only, followed transitively."""
    return closure(Sources(root), modules, [package], strict=True).files
