"""Kernel extraction: the ``@triton.jit`` functions of a package, read as text, never run.

:func:`extract_kernels` parses every ``.py`` file of a package with ``ast.parse`` and keeps,
for each file, only what its kernels need, written out as a new module:

* every ``@triton.jit`` function (``@triton.jit``, ``@triton.jit(...)``, ``@jit`` after
  ``from triton import jit``); ``@triton.autotune`` and ``@triton.heuristics`` wrappers are
  dropped, because the recorded launch already holds the values they chose;
* the module constants its kernels read (``BLOCK = 128``, ``BLOCK = tl.constexpr(128)``,
  arithmetic of those), evaluated here and written as literals;
* imports of kernels and constants from the package's other files (``from .tiles import
  _helper``), pointing at those files' extracted modules.

Each kernel is checked against an ALLOW-LIST of Triton-language constructs (:class:`_Checker`):
what is not on it is refused, with a :class:`KernelSourceError` that names the file, the line
and the construct. The list, and why it is what it is:

* statements: assignments (one target: a name or a tuple of names), ``for`` over ``range``,
  ``tl.range`` or ``tl.static_range``, ``while``, ``if``, ``return``, a call on its own line,
  ``pass``/``break``/``continue``, ``assert``, a docstring;
* expressions: arithmetic, comparisons, ``and``/``or``/``not``, ``a if c else b``, calls,
  names, constants, attributes, indexing and slices, tuples and lists;
* names: the kernel's parameters and locals, ``tl``/``triton``, the package's other
  ``@triton.jit`` functions and constants, and the builtins ``range``, ``min``, ``max``,
  ``len``, ``int``, ``float``, ``bool``, ``abs``, ``print``;
* attributes: a chain under ``tl`` (``triton.language``) that stays inside the Triton
  language (``tl.core.builtins``, Python's own ``builtins`` module reached through Triton,
  is refused), ``triton.cdiv`` and ``triton.next_power_of_2``, and on any other value the
  public attributes and methods of Triton's tensors, dtypes and descriptors (``x.to``,
  ``x.dtype``, ``p.dtype.element_ty``, ``x.T``): not ``x.handle``, which under the
  interpreter is a NumPy array with file-writing methods.

**Whose kernel.** A kernel is the learner's when its source is in the learner's files: the
bundle holds those and nothing else, and a replay runs a launch only by a bundle kernel's name.
So a kernel of the learner's launched by a host-side helper of the course (a ``Launcher`` from
``reference.kernels.launch``, a grid from ``reference.kernels.row_plan``'s plans, which the
exercises import from the reference) is replayed as the learner's, and a kernel defined in
``reference/`` (a ``@triton.jit`` or a Hopper ``@gluon.jit`` one), whoever launches it, is not:
the recorder names its launch ``outside:reference...`` and the replay refuses it. A kernel of
the learner's that calls or reads a name imported from the reference is refused here, as every
name imported from outside the package is.

Everything else is refused: imports, nested functions and lambdas, classes, ``with``,
``try``, ``global``, comprehensions, star-arguments, f-strings, ``_private`` and ``__dunder__``
attributes, ``getattr``/``eval``/``exec``/``open``/``__import__``/``globals`` ... A kernel is
Triton code: these are Python's ways of reaching outside it. The decorators' own arguments,
the parameters' annotations and defaults, which Python evaluates when the module is loaded,
must be literals.
"""

from __future__ import annotations

import ast
import copy
import math
import re
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import triton.language as tl

from learning.check.replay.errors import KernelSourceError

_BUILTINS = frozenset({"range", "min", "max", "len", "int", "float", "bool", "abs", "print"})
_REACHING_BUILTINS = frozenset(
    {"getattr", "setattr", "delattr", "hasattr", "eval", "exec", "compile", "open",
     "__import__", "globals", "locals", "vars", "dir", "type", "object", "super", "input",
     "breakpoint", "memoryview", "classmethod", "staticmethod", "property", "isinstance",
     "issubclass", "id", "iter", "next", "help", "exit", "quit", "__builtins__"}
)  # fmt: skip
_TRITON_FUNCTIONS = frozenset({"cdiv", "next_power_of_2"})  # triton.<these> in a kernel
_LOOP_CALLS = frozenset({"range", "static_range"})  # tl.<these> as a for loop's iterator
_JIT_OPTIONS = frozenset({"do_not_specialize", "do_not_specialize_on_alignment", "debug",
                          "noinline"})  # fmt: skip
_WRAPPERS = frozenset({"autotune", "heuristics"})  # triton.<these>: dropped
COURSE_PACKAGE = "reference"  # the course's kernels and the helpers the exercises import


def _value_attributes() -> frozenset[str]:
    """The attributes a kernel may read on its values: the public API of Triton's value types
    (tensors, dtypes, pointer and block types, constexprs, tensor descriptors, tuples), plus
    the attributes their instances carry. ``handle`` (the value's IR or NumPy handle) is not
    among them."""
    names = {"dtype", "shape", "type", "numel", "value", "element_ty", "scalar", "name",
             "primitive_bitwidth", "int_bitwidth", "fp_mantissa_width", "exponent_bias",
             "block_shape", "strides", "base", "layout", "nbytes"}  # fmt: skip
    classes = [tl.tensor, tl.dtype, tl.pointer_type, tl.block_type, tl.constexpr, tl.tuple,
               tl.tensor_descriptor, getattr(tl, "tensor_descriptor_base", tl.tensor)]
    for cls in classes:
        names |= {n for n in dir(cls) if not n.startswith("_")}
    return frozenset(names - {"handle"})


_VALUE_ATTRIBUTES = _value_attributes()


# --------------------------------------------------------------------------- the bundle


@dataclass(frozen=True)
class KernelBundle:
    """The kernels of one package as plain data (see :func:`extract_kernels`).

    ``modules``: the generated source of each file that holds kernels (or constants they
    import), keyed by its path relative to the package root (``"kernels/softmax.py"``).
    ``kernels``: every kernel found, ``"<relpath>::<function name>"`` -> its module key.
    """

    package: str
    modules: dict[str, str]
    kernels: dict[str, str]

    def as_dict(self) -> dict:
        """A JSON-serialisable copy."""
        return {"package": self.package, "modules": dict(self.modules),
                "kernels": dict(self.kernels)}  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict) -> KernelBundle:
        """The bundle :meth:`as_dict` wrote; ValueError in one line for anything else."""
        if not isinstance(data, dict) or set(data) != {"package", "modules", "kernels"}:
            raise ValueError("a kernel bundle is a dict with package, modules and kernels")
        package, modules, kernels = data["package"], data["modules"], data["kernels"]
        if not isinstance(package, str) or not package.isidentifier():
            raise ValueError(f"a kernel bundle's package must be a name, got {package!r:.60}")
        for what, table in (("modules", modules), ("kernels", kernels)):
            if not isinstance(table, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in table.items()
            ):
                raise ValueError(f"a kernel bundle's {what} must map strings to strings")
        for key in modules:
            _check_relpath(key)
        for name, module in kernels.items():
            if module not in modules or name.partition("::")[0] != module:
                raise ValueError(f"kernel {name!r:.80} names a module the bundle lacks")
        return cls(package, dict(modules), dict(kernels))


def _check_relpath(key: str) -> None:
    parts = key.split("/")
    if not key.endswith(".py") or not all(p.removesuffix(".py").isidentifier() for p in parts):
        raise ValueError(f"a bundle module key must be a relative .py path, got {key!r:.80}")


# --------------------------------------------------------------------------- moved helpers

_NO_MODULE = re.compile(r"No module named '([\w.]+)'|cannot import name '(\w+)' from '([\w.]+)'")


def moved_helper(message: str, package: str) -> str | None:
    """For an import error of the learner's ``package`` that names one of the course's helpers
    (``No module named 'exercises.kernels.row_plan'``: a file written when the helpers were
    copied into ``exercises/``): one line saying where the helper is and the import to write.
    None for any other error."""
    from learning import manifest

    match = _NO_MODULE.search(message)
    if match is None:
        return None
    name = match[2]
    module = match[1] or f"{match[3]}.{name}"
    top, _, inside = module.partition(".")
    course = manifest.load()
    relpath = f"{COURSE_PACKAGE}/{inside.replace('.', '/')}.py"
    exercises = {path for e in course.exercises.values() for path in e.reference}
    if top != package or not inside or relpath in exercises or not (
        manifest.ROOT / relpath
    ).is_file():
        return None
    parent, _, leaf = inside.rpartition(".")
    if match[1]:
        written, instead = f"from .{leaf} import ...", f"from {COURSE_PACKAGE}.{inside} import ..."
    else:
        written = f"from . import {leaf}"
        instead = f"from {'.'.join(filter(None, [COURSE_PACKAGE, parent]))} import {leaf}"
    return (f"{module} is the course's helper {COURSE_PACKAGE}.{inside} now, no longer copied "
            f"into {package}/: write `{instead}` for `{written}` in your file "
            "(`python scripts/make_exercises.py --check` names each such line)")


# --------------------------------------------------------------------------- extraction


def extract_kernels(package_root: Path, package: str) -> KernelBundle:
    """Every ``@triton.jit`` function under ``package_root``, checked against the allow-list.

    Each ``.py`` file is parsed (``ast.parse``), never imported. Raises
    :class:`~learning.check.replay.KernelSourceError` for the first construct refused, and
    for a file or folder that is a link to somewhere outside the package.
    """
    root = Path(package_root)
    if not root.is_dir():
        raise KernelSourceError(f"{root}: not a folder (the package's kernels are read from it)")
    real_root = root.resolve()
    sources: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if any(part.startswith(".") or part == "__pycache__" for part in relative.parts):
            continue
        shown = f"{package}/{relative.as_posix()}"
        if not path.resolve().is_relative_to(real_root):
            raise KernelSourceError(
                f"{shown}: a link to {path.resolve()}, outside the package: only the package's "
                "own files are read (copy your code into the file instead)"
            )
        if not all(p.removesuffix(".py").isidentifier() for p in relative.parts):
            continue  # not importable as a module: nothing could launch a kernel from it
        try:
            sources[relative.as_posix()] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise KernelSourceError(f"{shown}: cannot be read: {error}") from None
    return extract_sources(sources, package)


def extract_sources(sources: dict[str, str], package: str) -> KernelBundle:
    """:func:`extract_kernels` on file texts already read (``relpath -> source``)."""
    files = {relpath: _File.parse(relpath, text, package) for relpath, text in sources.items()}
    for file in files.values():
        file.check_kernels(files)
    # What each module must define: its kernels, and the constants and imports that its own
    # kernels, or another module's kernels through an import, read.
    needed: dict[str, set[str]] = {relpath: set() for relpath in files}
    work = [(relpath, name) for relpath, file in files.items() for name in file.used]
    while work:
        relpath, name = work.pop()
        if name in needed[relpath]:
            continue
        needed[relpath].add(name)
        module, original = files[relpath].imports.get(name, (None, None))
        target = _resolve(files, module) if module is not None else None
        if target is not None:
            work.append((target, original))
    modules, kernels = {}, {}
    for relpath, file in files.items():
        if file.kernels or needed[relpath]:
            modules[relpath] = file.generate(needed[relpath])
            for name in file.kernels:
                kernels[f"{relpath}::{name}"] = relpath
    return KernelBundle(package, modules, kernels)


@dataclass
class _Constant:
    value: Any
    constexpr: bool


@dataclass
class _File:
    """One parsed file: what it binds at module level, as the kernels may see it."""

    relpath: str
    shown: str  # "exercises/kernels/softmax.py", for messages
    tl_aliases: set[str] = field(default_factory=lambda: {"tl"})
    triton_aliases: set[str] = field(default_factory=lambda: {"triton"})
    jit_aliases: set[str] = field(default_factory=set)
    wrapper_aliases: set[str] = field(default_factory=set)
    kernels: dict[str, ast.FunctionDef] = field(default_factory=dict)
    options: dict[str, dict[str, Any]] = field(default_factory=dict)  # kernel -> jit options
    constants: dict[str, _Constant] = field(default_factory=dict)
    imports: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (module, name)
    refused: dict[str, str] = field(default_factory=dict)  # module-level name -> why not usable
    used: set[str] = field(default_factory=set)  # constants and imports the kernels read

    @classmethod
    def parse(cls, relpath: str, text: str, package: str) -> _File:
        file = cls(relpath, f"{package}/{relpath}")
        try:
            tree = ast.parse(text, filename=file.shown)
        except SyntaxError as error:
            raise KernelSourceError(
                f"{file.shown}:{error.lineno}: cannot be parsed: {error.msg}"
            ) from None
        for node in tree.body:
            file._bind(node, package)
        return file

    def error(self, node: ast.AST, message: str) -> KernelSourceError:
        return KernelSourceError(f"{self.shown}:{getattr(node, 'lineno', 0)}: {message}")

    # -- module level -----------------------------------------------------------------------

    def _forget(self, name: str) -> None:
        for table in (self.kernels, self.constants, self.imports, self.refused):
            table.pop(name, None)
        for aliases in (self.tl_aliases, self.triton_aliases, self.jit_aliases,
                        self.wrapper_aliases):  # fmt: skip
            aliases.discard(name)

    def _bind(self, node: ast.stmt, package: str) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.partition(".")[0]
                bound = alias.asname or top
                self._forget(bound)
                if alias.asname and alias.name == "triton.language":
                    self.tl_aliases.add(bound)
                elif alias.name == "triton" or (not alias.asname and top == "triton"):
                    self.triton_aliases.add(bound)  # import triton, import triton.language
                else:
                    self.refused[bound] = f"the module {alias.name}, imported"
        elif isinstance(node, ast.ImportFrom):
            self._bind_from(node, package)
        elif isinstance(node, ast.FunctionDef):
            self._forget(node.name)
            jit = self._jit_decorator(node)
            if jit is None:
                self.refused[node.name] = "a Python function, not a @triton.jit kernel"
            else:
                self.kernels[node.name] = node
                self.options[node.name] = jit
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            for name in _bound_names(targets):
                self._forget(name)
                self.refused[name] = "assigned something that is not a constant"
            if len(targets) == 1 and len(names) == 1 and node.value is not None:
                try:
                    self.constants[names[0]] = self._constant(node.value)
                    del self.refused[names[0]]
                except _NotConstant as why:
                    self.refused[names[0]] = f"assigned {why}, not a constant"
        else:
            for name in _bound_names([node]):
                self._forget(name)
                self.refused[name] = "bound by a statement other than NAME = constant"

    def _bind_from(self, node: ast.ImportFrom, package: str) -> None:
        module = node.module or ""
        if node.level == 0 and module == "triton":
            for alias in node.names:
                bound = alias.asname or alias.name
                self._forget(bound)
                if alias.name == "language":
                    self.tl_aliases.add(bound)
                elif alias.name == "jit":
                    self.jit_aliases.add(bound)
                elif alias.name in _WRAPPERS:
                    self.wrapper_aliases.add(bound)
                else:
                    self.refused[bound] = f"triton.{alias.name}, imported"
            return
        target = self._target(node, package)
        for alias in node.names:
            bound = alias.asname or alias.name
            self._forget(bound)
            if alias.name == "*":
                continue  # nothing known is bound: a kernel reading such a name is refused
            if target is None:
                origin = "." * node.level + module
                whose = "the course's reference" if origin.split(".")[0] == COURSE_PACKAGE \
                    else "outside the package"  # fmt: skip
                self.refused[bound] = f"imported from {origin}, {whose}"
            else:
                self.imports[bound] = (target, alias.name)

    def _target(self, node: ast.ImportFrom, package: str) -> str | None:
        """The package module a ``from ... import`` reads (``"kernels/tiles"``, ``""`` for
        the package itself), or None for one outside the package."""
        parts = (node.module or "").split(".") if node.module else []
        if node.level == 0:
            if not parts or parts[0] != package:
                return None
            base: list[str] = parts[1:]
        else:
            here = self.relpath.split("/")[:-1]
            if node.level - 1 > len(here):
                return None
            base = here[: len(here) - (node.level - 1)] + parts
        return "/".join(base)

    def _jit_decorator(self, node: ast.FunctionDef) -> dict[str, Any] | None:
        """The jit options of a ``@triton.jit`` function, None for a plain function."""
        if not node.decorator_list:
            return None
        *outer, innermost = node.decorator_list
        call = innermost if isinstance(innermost, ast.Call) else None
        target = call.func if call else innermost
        if not self._is_triton(target, "jit", self.jit_aliases):
            if any(self._decorator_name(d) in ("jit", *_WRAPPERS) for d in node.decorator_list):
                raise self.error(
                    node, f"kernel {node.name}: @triton.jit must be the innermost decorator "
                    "(written last, right above the def)"
                )
            return None
        for decorator in outer:
            name = self._decorator_name(decorator)
            if name not in _WRAPPERS:
                raise self.error(
                    decorator,
                    f"decorator {ast.unparse(decorator)[:60]} on kernel {node.name}: only "
                    "@triton.jit, @triton.autotune and @triton.heuristics are understood",
                )
        options: dict[str, Any] = {}
        if call is not None:
            if call.args:
                raise self.error(call, f"@triton.jit(...) on kernel {node.name}: pass its "
                                 "options by name (do_not_specialize=[...])")  # fmt: skip
            for keyword in call.keywords:
                if keyword.arg not in _JIT_OPTIONS:
                    raise self.error(
                        keyword, f"@triton.jit({keyword.arg}=...) on kernel {node.name}: "
                        f"the options a kernel may set are {', '.join(sorted(_JIT_OPTIONS))}"
                    )
                try:
                    value = ast.literal_eval(keyword.value)
                except ValueError:
                    raise self.error(
                        keyword, f"@triton.jit({keyword.arg}=...) on kernel {node.name}: "
                        "the value must be a literal (a list of names, True, False)"
                    ) from None
                _check_option(self, keyword, node.name, value)
                options[keyword.arg] = value
        return options

    def _decorator_name(self, decorator: ast.expr) -> str | None:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        for name in ("jit", *_WRAPPERS):
            aliases = self.jit_aliases if name == "jit" else self.wrapper_aliases
            if self._is_triton(target, name, aliases):
                return name
        return None

    def _is_triton(self, node: ast.expr, name: str, aliases: set[str]) -> bool:
        """``triton.<name>``, or a name bound by ``from triton import <name>``."""
        if isinstance(node, ast.Name):
            return node.id in aliases
        return (
            isinstance(node, ast.Attribute)
            and node.attr == name
            and isinstance(node.value, ast.Name)
            and node.value.id in self.triton_aliases
        )

    def _constant(self, node: ast.expr) -> _Constant:
        """A module-level value a kernel may read: evaluated here, never by Python's eval."""
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool | int | float | str) or node.value is None:
                if isinstance(node.value, str) and len(node.value) > 256:
                    raise _NotConstant("a string longer than 256 characters")
                return _Constant(node.value, False)
            raise _NotConstant(f"a {type(node.value).__name__} literal")
        if isinstance(node, ast.Name):
            if node.id in self.constants:
                return self.constants[node.id]
            raise _NotConstant(f"the name {node.id}")
        if isinstance(node, ast.Call):
            if (
                isinstance(node.func, ast.Attribute)
                and node.func.attr == "constexpr"
                and self._is_language(node.func.value)
                and len(node.args) == 1
                and not node.keywords
            ):
                return _Constant(self._constant(node.args[0]).value, True)
            raise _NotConstant(f"a call ({ast.unparse(node)[:40]})")
        if isinstance(node, ast.UnaryOp | ast.BinOp):
            operands = [node.operand] if isinstance(node, ast.UnaryOp) else [node.left, node.right]
            values = [self._constant(o) for o in operands]
            numbers = [v.value for v in values]
            if not all(isinstance(n, int | float) for n in numbers):
                raise _NotConstant("arithmetic on something other than numbers")
            result = _arithmetic(node, numbers)
            return _Constant(result, any(v.constexpr for v in values))
        raise _NotConstant(f"a {type(node).__name__} expression")

    def _is_language(self, node: ast.expr) -> bool:
        """``tl`` or ``triton.language``."""
        if isinstance(node, ast.Name):
            return node.id in self.tl_aliases
        return (
            isinstance(node, ast.Attribute)
            and node.attr == "language"
            and isinstance(node.value, ast.Name)
            and node.value.id in self.triton_aliases
        )

    # -- kernels ----------------------------------------------------------------------------

    def check_kernels(self, files: dict[str, _File]) -> None:
        for node in self.kernels.values():
            _Checker(self, files, node).check()

    def generate(self, needed: set[str]) -> str:
        """This file's extracted module: imports, the constants read, the kernels."""
        lines = [
            f"# The @triton.jit functions of {self.shown} and what they read, extracted by",
            "# learning.check.replay: nothing else of the file is here.",
            "import triton",
            "import triton.language as tl",
        ]
        lines += [f"import triton.language as {a}" for a in sorted(self.tl_aliases - {"tl"})]
        lines += [f"import triton as {a}" for a in sorted(self.triton_aliases - {"triton"})]
        depth = self.relpath.count("/")
        by_module: dict[str, list[str]] = {}
        for name in sorted(needed & set(self.imports)):
            target, original = self.imports[name]  # a module path: "kernels/tiles"
            by_module.setdefault(target, []).append(
                original if original == name else f"{original} as {name}"
            )
        for target, names in sorted(by_module.items()):
            lines.append(f"from {'.' * (depth + 1)}{target.replace('/', '.')} import "
                         f"{', '.join(names)}")  # fmt: skip
        for name, constant in self.constants.items():
            if name in needed:
                value = _literal(constant.value)
                lines.append(f"{name} = tl.constexpr({value})" if constant.constexpr
                             else f"{name} = {value}")  # fmt: skip
        for name, node in self.kernels.items():
            options = self.options[name]
            arguments = ", ".join(f"{k}={v!r}" for k, v in sorted(options.items()))
            bare = copy.copy(node)
            bare.decorator_list = []
            lines += ["", "", f"@triton.jit({arguments})" if arguments else "@triton.jit",
                      ast.unparse(ast.fix_missing_locations(bare))]  # fmt: skip
        return "\n".join(lines) + "\n"


class _NotConstant(Exception):
    pass


def _check_option(file: _File, node: ast.AST, kernel: str, value: Any) -> None:
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, list | tuple) and all(
        isinstance(v, str | int) and not isinstance(v, bool) for v in value
    ):
        return
    raise file.error(node, f"@triton.jit option on kernel {kernel}: {value!r:.40} is not a "
                     "list of parameter names or a bool")  # fmt: skip


def _arithmetic(node: ast.UnaryOp | ast.BinOp, numbers: list) -> int | float:
    operators = {
        ast.UAdd: lambda a: +a, ast.USub: lambda a: -a, ast.Invert: lambda a: ~a,
        ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
        ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b,
        ast.Mod: lambda a, b: a % b, ast.Pow: lambda a, b: a**b,
        ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b,
        ast.BitAnd: lambda a, b: a & b, ast.BitOr: lambda a, b: a | b,
        ast.BitXor: lambda a, b: a ^ b,
    }  # fmt: skip
    operator = operators.get(type(node.op))
    if operator is None:
        raise _NotConstant(f"the operator {type(node.op).__name__}")
    if isinstance(node.op, ast.Pow | ast.LShift) and abs(numbers[1]) > 256:
        raise _NotConstant("a power or shift beyond 256")
    try:
        result = operator(*numbers)
    except (ArithmeticError, TypeError, ValueError) as error:
        raise _NotConstant(f"arithmetic that fails ({error})") from None
    if isinstance(result, complex) or (isinstance(result, int) and abs(result) >= 2**256):
        raise _NotConstant("a number out of range")
    return result


def _literal(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({repr(value)!r})"
    return repr(value)


def _bound_names(nodes: list[ast.AST]) -> set[str]:
    """Names a module-level statement binds (assignment targets, loop variables, defs...)."""
    names: set[str] = set()
    for node in nodes:
        for child in ast.walk(node):
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                names.add(child.id)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(child.name)
            elif isinstance(child, ast.Import | ast.ImportFrom):
                names.update((a.asname or a.name).partition(".")[0] for a in child.names)
    return names


# --------------------------------------------------------------------------- the allow-list

_WHY = {
    ast.Import: "an import inside a kernel: a kernel is Triton code and uses only tl.* "
    "(imports belong at the top of the file, for the Python that launches it)",
    ast.ImportFrom: "an import inside a kernel: a kernel is Triton code and uses only tl.*",
    ast.With: "a with block: Triton kernels have no context managers",
    ast.AsyncWith: "a with block: Triton kernels have no context managers",
    ast.Try: "try/except: a kernel cannot catch exceptions",
    ast.TryStar: "try/except: a kernel cannot catch exceptions",
    ast.Raise: "raise: a kernel cannot raise; use tl.device_assert or tl.static_assert",
    ast.FunctionDef: "a function defined inside a kernel: write it as its own @triton.jit "
    "function at the top of the file",
    ast.AsyncFunctionDef: "a function defined inside a kernel",
    ast.ClassDef: "a class inside a kernel: kernels work on Triton values only",
    ast.Lambda: "a lambda inside a kernel: write a @triton.jit function at the top of the file",
    ast.Global: "global: a kernel works on its arguments and its own locals only",
    ast.Nonlocal: "nonlocal: a kernel works on its arguments and its own locals only",
    ast.Delete: "del: a kernel has nothing to delete",
    ast.ListComp: "a comprehension: write a loop over tl.static_range instead",
    ast.SetComp: "a comprehension: write a loop over tl.static_range instead",
    ast.DictComp: "a comprehension: write a loop over tl.static_range instead",
    ast.GeneratorExp: "a generator expression: write a loop over tl.static_range instead",
    ast.Starred: "star-arguments (*args): pass each argument on its own",
    ast.JoinedStr: "an f-string: a kernel prints with tl.device_print or tl.static_print and "
    "a plain string",
    ast.NamedExpr: "the := operator: assign on a line of its own",
    ast.Dict: "a dict: Triton kernels have tensors, scalars and tuples only",
    ast.Set: "a set: Triton kernels have tensors, scalars and tuples only",
    ast.Await: "await: kernels are not coroutines",
    ast.Yield: "yield: kernels are not generators",
    ast.YieldFrom: "yield: kernels are not generators",
    ast.Match: "match: use if/elif",
    ast.AsyncFor: "async for: kernels are not coroutines",
}

_STATEMENTS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.While, ast.If,
               ast.Return, ast.Expr, ast.Pass, ast.Break, ast.Continue, ast.Assert)  # fmt: skip
_EXPRESSIONS = (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call,
                ast.Name, ast.Constant, ast.Attribute, ast.Subscript, ast.Slice, ast.Tuple,
                ast.List)  # fmt: skip
_OPERATORS = (ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.expr_context)
_MISSING = object()


class _Checker:
    """One kernel against the allow-list (see the module docstring)."""

    def __init__(self, file: _File, files: dict[str, _File], node: ast.FunctionDef):
        self.file, self.files, self.node = file, files, node
        self.kernel = node.name
        arguments = node.args
        self.params = {a.arg for a in arguments.args}
        self.locals = _bound_names(node.body)

    def refuse(self, node: ast.AST, construct: str, why: str) -> KernelSourceError:
        return self.file.error(node, f"{construct} in kernel {self.kernel}: {why}")

    def check(self) -> None:
        node, arguments = self.node, self.node.args
        if arguments.vararg or arguments.kwarg or arguments.kwonlyargs or arguments.posonlyargs:
            raise self.refuse(node, "*args, **kwargs or keyword-only parameters",
                              "a kernel's parameters are plain names (x_ptr, N: tl.constexpr)")
        for argument in arguments.args:
            if argument.annotation is not None:
                self.annotation(argument.annotation)
        for default in arguments.defaults:
            self.literal(default, "a parameter's default")
        if node.returns is not None:
            raise self.refuse(node.returns, "a return annotation",
                              "Python evaluates it when the file loads; leave it out")
        for position, statement in enumerate(node.body):
            docstring = (
                position == 0
                and isinstance(statement, ast.Expr)
                and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)
            )
            if not docstring:
                self.statement(statement)

    def annotation(self, node: ast.expr) -> None:
        """A parameter's annotation: ``tl.constexpr`` (or any tl attribute), or a string."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return
        if isinstance(node, ast.Attribute) and self.file._is_language(node.value):
            self.language_chain(node, [node.attr])
            return
        raise self.refuse(node, f"the annotation {ast.unparse(node)[:40]}",
                          "a parameter is annotated tl.constexpr or not at all")

    def literal(self, node: ast.expr, what: str) -> None:
        if isinstance(node, ast.Constant) and not isinstance(node.value, bytes):
            return
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            return self.literal(node.operand, what)
        if isinstance(node, ast.Name) and node.id in self.file.constants:
            self.file.used.add(node.id)
            return
        raise self.refuse(node, f"{what} {ast.unparse(node)[:40]}",
                          "Python evaluates it when the file loads: use a literal (128, None)")

    # -- statements -------------------------------------------------------------------------

    def statements(self, body: list[ast.stmt]) -> None:
        for statement in body:
            self.statement(statement)

    def statement(self, node: ast.stmt) -> None:
        if not isinstance(node, _STATEMENTS):
            raise self.refuse(node, _construct(node), _WHY.get(
                type(node), "not a statement of the Triton language (see the allow-list: "
                "assignments, for over range/tl.range/tl.static_range, while, if, return, "
                "calls, pass, break, continue, assert)"))  # fmt: skip
        if isinstance(node, ast.Assign):
            if len(node.targets) != 1:
                raise self.refuse(node, "a chained assignment (a = b = ...)",
                                  "Triton assigns one target at a time")
            self.target(node.targets[0])
            self.expression(node.value)
        elif isinstance(node, ast.AugAssign):
            self.target(node.target, tuples=False)
            self.expression(node.value)
        elif isinstance(node, ast.AnnAssign):
            self.target(node.target, tuples=False)
            self.annotation(node.annotation)
            if node.value is None:
                raise self.refuse(node, "an annotation without a value", "assign a value")
            self.expression(node.value)
        elif isinstance(node, ast.For):
            if node.orelse:
                raise self.refuse(node, "for ... else", "Triton loops have no else branch")
            self.target(node.target)
            self.loop_iterator(node.iter)
            self.statements(node.body)
        elif isinstance(node, ast.While):
            if node.orelse:
                raise self.refuse(node, "while ... else", "Triton loops have no else branch")
            self.expression(node.test)
            self.statements(node.body)
        elif isinstance(node, ast.If):
            self.expression(node.test)
            self.statements(node.body)
            self.statements(node.orelse)
        elif isinstance(node, ast.Return):
            if node.value is not None:
                self.expression(node.value)
        elif isinstance(node, ast.Expr):
            if not isinstance(node.value, ast.Call):
                raise self.refuse(node, f"the expression {ast.unparse(node)[:40]} on its own",
                                  "a line on its own must be a call (tl.store(...))")
            self.expression(node.value)
        elif isinstance(node, ast.Assert):
            self.expression(node.test)
            if node.msg is not None:
                self.expression(node.msg)

    def target(self, node: ast.expr, tuples: bool = True) -> None:
        if isinstance(node, ast.Name):
            return
        if tuples and isinstance(node, ast.Tuple | ast.List):
            for element in node.elts:
                self.target(element, tuples=False)
            return
        if isinstance(node, ast.Attribute):
            raise self.refuse(node, f"assigning to {ast.unparse(node)[:40]}",
                              "that changes a Python object, not a Triton value")
        if isinstance(node, ast.Subscript):
            raise self.refuse(node, f"assigning to {ast.unparse(node)[:40]}",
                              "Triton tensors are values: build a new one (tl.where) or "
                              "tl.store into memory")
        raise self.refuse(node, f"assigning to {ast.unparse(node)[:40]}",
                          "assign to a name or a tuple of names")

    def loop_iterator(self, node: ast.expr) -> None:
        ok = isinstance(node, ast.Call) and (
            (isinstance(node.func, ast.Name) and node.func.id == "range"
             and node.func.id not in self.params | self.locals)
            or (isinstance(node.func, ast.Attribute) and node.func.attr in _LOOP_CALLS
                and self.file._is_language(node.func.value))
        )  # fmt: skip
        if not ok:
            raise self.refuse(node, f"a loop over {ast.unparse(node)[:40]}",
                              "a kernel loops over range(...), tl.range(...) or "
                              "tl.static_range(...)")
        self.expression(node)

    # -- expressions ------------------------------------------------------------------------

    def expression(self, node: ast.AST) -> None:
        if isinstance(node, (*_OPERATORS, ast.keyword)):
            if isinstance(node, ast.keyword):
                if node.arg is None:
                    raise self.refuse(node, "**keyword arguments",
                                      "pass each keyword argument by name")
                self.expression(node.value)
            return
        if not isinstance(node, _EXPRESSIONS):
            raise self.refuse(node, _construct(node), _WHY.get(
                type(node), "not an expression of the Triton language"))  # fmt: skip
        if isinstance(node, ast.Name):
            self.name(node)
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, bytes | complex):
                raise self.refuse(node, f"the constant {node.value!r:.30}",
                                  "kernels use numbers, strings, True/False and None")
        elif isinstance(node, ast.Attribute):
            self.attribute(node)
        elif isinstance(node, ast.Call):
            self.call(node)
        else:
            for child in ast.iter_child_nodes(node):
                self.expression(child)

    def call(self, node: ast.Call) -> None:
        function = node.func
        if isinstance(function, ast.Name) and function.id in _REACHING_BUILTINS:
            raise self.refuse(
                node, f"{function.id}(...)",
                f"{function.id} is a Python builtin that reaches outside the kernel; a kernel "
                "calls tl.* functions, your other @triton.jit functions and range, min, max, "
                "len, int, float, bool, abs, print",
            )
        self.expression(function)
        for argument in (*node.args, *node.keywords):
            self.expression(argument)

    def name(self, node: ast.Name) -> None:
        name = node.id
        if name in self.params or name in self.locals or name == self.kernel:
            return
        file = self.file
        if name in file.kernels:
            return
        if name in file.constants:
            file.used.add(name)
            return
        if name in file.imports:
            self.imported(node, *file.imports[name])
            file.used.add(name)
            return
        if name in file.tl_aliases or name in file.triton_aliases:
            raise self.refuse(node, f"the module {name} as a value",
                              f"use its functions ({name}.load, ...), not the module itself")
        if name in _BUILTINS:
            return
        if name in _REACHING_BUILTINS or name.startswith("__"):
            raise self.refuse(node, f"the name {name}",
                              f"{name} reaches Python internals, outside the Triton language")
        if name in file.refused:
            raise self.refuse(node, f"the name {name}",
                              f"{name} is {file.refused[name]}; a kernel reads only its "
                              "parameters, its locals, tl, your @triton.jit functions and "
                              "constants (NAME = 16, NAME = tl.constexpr(16))")
        raise self.refuse(node, f"the name {name}",
                          f"{name} is not a parameter, a local, tl/triton, a @triton.jit "
                          "function of your package or a constant of the file "
                          "(NAME = 16 or NAME = tl.constexpr(16))")

    def imported(self, node: ast.AST, module: str, original: str) -> None:
        package = self.file.shown.split("/")[0]
        what = f"{original} (imported from {'.'.join([package, *module.split('/')]).rstrip('.')})"
        seen: set[tuple[str, str]] = set()
        step: tuple[str, str] | None = (module, original)
        while step is not None and step not in seen:  # imported there in turn: follow it
            seen.add(step)
            relpath = _resolve(self.files, step[0])
            if relpath is None:
                raise self.refuse(node, f"the name {what}", "no such file in the package")
            there = self.files[relpath]
            if step[1] in there.kernels or step[1] in there.constants:
                return
            step = there.imports.get(step[1])
        raise self.refuse(node, f"the name {what}",
                          "it is not a @triton.jit function or a constant there")

    def attribute(self, node: ast.Attribute) -> None:
        chain: list[str] = []
        base: ast.expr = node
        while isinstance(base, ast.Attribute):
            chain.append(base.attr)
            base = base.value
        chain.reverse()
        for attribute in chain:
            if attribute.startswith("__"):
                raise self.refuse(node, f"the attribute .{attribute}",
                                  "__dunder__ attributes reach Python internals, not Triton "
                                  "values")
            if attribute.startswith("_"):
                raise self.refuse(node, f"the attribute .{attribute}",
                                  "a _private attribute is not part of the Triton language")
        local = isinstance(base, ast.Name) and base.id in self.params | self.locals
        if isinstance(base, ast.Name) and not local:
            if base.id in self.file.tl_aliases:
                return self.language_chain(node, chain)
            if base.id in self.file.triton_aliases:
                if chain[0] == "language":
                    return self.language_chain(node, chain[1:])
                if chain[0] in _TRITON_FUNCTIONS:
                    return self.value_chain(node, chain[1:])
                raise self.refuse(node, f"triton.{chain[0]}",
                                  "a kernel may use triton.language (tl), triton.cdiv and "
                                  "triton.next_power_of_2 only")
        self.expression(base)
        self.value_chain(node, chain)

    def language_chain(self, node: ast.AST, chain: list[str]) -> None:
        """``tl.<chain>``: must stay inside triton.language while it walks modules."""
        value: Any = tl
        for position, attribute in enumerate(chain):
            if not isinstance(value, types.ModuleType):
                return self.value_chain(node, chain[position:])
            shown = ".".join(["tl", *chain[: position + 1]])
            value = getattr(value, attribute, _MISSING)
            if value is _MISSING:
                raise self.refuse(node, shown, "Triton's language has no such name")
            if isinstance(value, types.ModuleType):
                if not value.__name__.startswith("triton.language"):
                    raise self.refuse(node, shown,
                                      f"that is the module {value.__name__}, outside the "
                                      "Triton language")
            elif not _in_language(value):
                raise self.refuse(node, shown, "that is not part of the Triton language")
        if isinstance(value, types.ModuleType):
            shown = ".".join(["tl", *chain])
            raise self.refuse(node, f"the module {shown} as a value",
                              f"use its functions ({shown}.<name>), not the module itself")

    def value_chain(self, node: ast.AST, chain: list[str]) -> None:
        for attribute in chain:
            if attribute not in _VALUE_ATTRIBUTES:
                raise self.refuse(node, f"the attribute .{attribute}",
                                  "a kernel reads only what Triton's values offer (x.to, "
                                  "x.dtype, p.dtype.element_ty, x.shape, x.T ...)")


def _resolve(files: dict[str, _File], module: str) -> str | None:
    """The file of a package module path: ``a/b.py`` or ``a/b/__init__.py``."""
    for relpath in (f"{module}.py", f"{module}/__init__.py" if module else "__init__.py"):
        if relpath in files:
            return relpath
    return None


def _in_language(value: Any) -> bool:
    if isinstance(value, bool | int | float | str) or value is None:
        return True
    function = getattr(value, "fn", None)  # a @jit function of Triton's own (tl.cdiv)
    if function is not None and isinstance(getattr(function, "__module__", None), str):
        return function.__module__.startswith("triton.language")
    module = getattr(value, "__module__", None) or type(value).__module__
    return isinstance(module, str) and module.startswith("triton.language")


def _construct(node: ast.AST) -> str:
    try:
        shown = ast.unparse(node).splitlines()[0]
    except Exception:  # an AST fragment unparse cannot print
        shown = type(node).__name__
    return shown if len(shown) <= 50 else shown[:47] + "..."

