"""Do the course's tools keep what they know of each op beside the op's spec, and out of their
own modules?

Each op's definition package holds its spec (``learning/ops/<op>/__init__.py``) and what only
the checker asks of it (``learning/ops/<op>/check.py``, read through
``learning.check.op_data``). The checker's own modules name no op: a table keyed by op name,
or an ``if spec.name == "softmax"``, would put one op's data where adding or editing an op
must not reach. And the checker's data stays out of every recorded report: no run imports it,
so editing a hint stales no evidence.
"""

from __future__ import annotations

import ast

import pytest

from learning import ops
from learning.report.binding import op_closure
from learning.report.closure import Sources
from learning.report.fingerprint import REPO_ROOT

# The modules of learning/ that may name ops in their code, each for a reason: everything else
# (the checker, the benchmark, the grader, the report tools) reads what it knows of an op from
# the op's definition package.
MAY_NAME_OPS = {
    "learning/ops/": "the definitions themselves",
    "learning/check/foundations/": "exercises whose subject is a named op (lessons 01-06)",
    "learning/check/measurement/": "lesson 07's exercise: counting the bytes and FLOPs of the "
    "ops it teaches, with a hint for each",
    "learning/check/harness.py": "lesson 14's harness exercise, which times softmax",
    "learning/report/sweeps.py": "which ops each recorded sweep covers, and the ceiling's case",
    "learning/check/replay/extract.py": "the Python builtins a kernel may call (max is one)",
}
CHECKER = tuple(
    path.relative_to(REPO_ROOT).as_posix()
    for path in sorted((REPO_ROOT / "learning").rglob("*.py"))
    if not path.relative_to(REPO_ROOT).as_posix().startswith(tuple(MAY_NAME_OPS))
)


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the docstring constants of a module, its classes and its functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def op_names_in(source: str) -> list[tuple[int, str]]:
    """``(line, name)`` for each string constant of ``source`` that is an op's name (a dict
    key, a comparison, an argument ...), docstrings aside."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in ops.NAMES
        and id(node) not in docstrings
    )  # fmt: skip


def test_the_exempt_modules_exist():
    """Is every exemption still a path of learning/ (a stale one would hide nothing, but say
    something false)?"""
    assert [path for path in MAY_NAME_OPS if not (REPO_ROOT / path).exists()] == []
    assert "learning/check/kernels.py" in CHECKER and "learning/grade/plausibility.py" in CHECKER


@pytest.mark.parametrize("path", CHECKER)
def test_the_checker_names_no_op(path):
    """Is every op's name absent from the checker's code (its docstrings and comments may
    mention ops)? What the checker must know of one op belongs in ``learning/ops/<op>/check.py``
    (see ``learning.check.op_data`` for what such a module may define)."""
    found = op_names_in((REPO_ROOT / path).read_text())
    assert found == [], (
        f"{path} names ops in its code: "
        + ", ".join(f"{name!r} on line {line}" for line, name in found)
        + ". Move what the checker knows of that op to learning/ops/<op>/check.py and read it "
        "through learning.check.op_data"
    )


def test_an_op_name_added_to_the_checker_is_found():
    """Does the search find the ways a table or a branch would name an op, and pass over a
    docstring and a comment that do?"""
    source = '''"""Grades softmax."""
_MIN_WIDTH = {"rmsnorm_train": 2}  # rmsnorm_train
def plan(spec):
    """For softmax too."""
    return spec.name == "softmax" or spec.name in ("sum", "maximum")
'''
    assert op_names_in(source) == [(2, "rmsnorm_train"), (5, "softmax"), (5, "sum")]


@pytest.mark.parametrize("impl", ["reference", "learner"])
def test_no_recorded_case_binds_the_checker_data(impl):
    """Is the checker's data in no op's closure: neither an op's ``__init__`` nor anything a
    run imports (the benchmark's engine, a learner run's worker) reaches a ``check`` module?
    Then rewording a hint stales no recorded case (``learning.report.binding``)."""
    own = [
        path.relative_to(REPO_ROOT).as_posix() for path in REPO_ROOT.glob("learning/ops/*/check.py")
    ]
    assert own, "no op keeps a check module: nothing to look for"
    checker_data = {"learning/check/op_data.py", "learning/check/wrapper_paths.py", *own}
    sources = Sources(REPO_ROOT)
    bound = {
        name: sorted(op_closure(sources, {"impl": impl}, name).files & checker_data)
        for name in ops.NAMES
    }
    assert {name: files for name, files in bound.items() if files} == {}
