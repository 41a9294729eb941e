"""A kernel copied from ``reference/``: the answer every learner's clone holds.

The copy runs, passes every replay and is as fast as the reference, because it is the
reference; only its source gives it away (:mod:`learning.check.originality`). These tests copy
each of the course's solution kernels the ways a learner could (as it is, renamed and
reformatted, moved into a jit helper of their own) and see the copy found; see the learner's
own kernel, the stubs and the reference's helpers left alone; and see the checker give a
copied add kernel nothing, naming what it copied.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from own_work import ADD, copier_package, make_exercises, own_solution

from learning.check import originality
from learning.check.runner import check_exercise

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = originality.solutions()
BY_NAME = {solution.name: solution for solution in SOLUTIONS.values()}
HEADER = "import triton\nimport triton.language as tl\n\n"


class _Rename(ast.NodeTransformer):
    """What a learner hiding a copy does: every name changed (the kernel's, its parameters',
    its locals', the module aliases'), comments and docstrings gone, the layout Python's own."""

    def _new(self, name: str) -> str:
        return f"my_{name.strip('_')}"

    def visit_FunctionDef(self, node):
        node.name = self._new(node.name)
        if ast.get_docstring(node) is not None:
            node.body = node.body[1:] or [ast.Pass()]
        self.generic_visit(node)
        return node

    def visit_arg(self, node):
        node.arg = self._new(node.arg)
        self.generic_visit(node)
        return node

    def visit_Name(self, node):
        node.id = self._new(node.id)
        return node

    def visit_alias(self, node):
        node.asname = self._new(node.asname or node.name.rpartition(".")[2])
        return node


def kernel_tree(name: str) -> tuple[ast.Module, ast.FunctionDef]:
    """A module holding the solution kernel ``name`` as its file has it, and the kernel."""
    tree = ast.parse(HEADER + decorated(BY_NAME[name]))
    return tree, next(n for n in tree.body if isinstance(n, ast.FunctionDef))


def decorated(solution: originality.Solution) -> str:
    """The kernel's text as its file has it, decorators, comments and all."""
    source = (ROOT / solution.path).read_text()
    tree = ast.parse(source)
    node = next(n for n in ast.walk(tree)
                if isinstance(n, ast.FunctionDef) and n.name == solution.name)  # fmt: skip
    lines = source.splitlines(keepends=True)
    return "".join(lines[node.decorator_list[0].lineno - 1 : node.end_lineno])


def test_every_kernel_exercise_has_solution_kernels():
    """The kernels to protect are found from the reference's solution regions: those of every
    kernel exercise's reference file, and nothing that holds no region (the helpers)."""
    from learning import ops

    paths = {solution.path for solution in SOLUTIONS.values()}
    # every op's kernel module, as the registry names it (kernels.softmax, ...)
    assert paths == {f"reference/{spec.module.replace('.', '/')}.py" for spec in ops.OPS.values()}
    assert {"_add_kernel", "_softmax_fwd_chunked_kernel", "_matmul_tile"} <= set(BY_NAME)
    assert not any(s.path.endswith(("launch.py", "row_plan.py", "cooperative.py"))
                   for s in SOLUTIONS.values())  # fmt: skip


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_a_copy_is_found_as_it_is_and_renamed(name):
    solution = BY_NAME[name]
    as_is = HEADER + decorated(solution)
    (found,) = originality.copies({"kernels/mine.py": as_is}, SOLUTIONS)
    assert (found.name, found.solution) == (name, solution)
    renamed = ast.unparse(_Rename().visit(ast.parse(as_is)))
    assert not re.search(rf"\btl\.|\b{name}\b", renamed), renamed
    (found,) = originality.copies({"kernels/mine.py": renamed}, SOLUTIONS)
    assert found.solution == solution and found.name == f"my_{name.strip('_')}"
    assert f"(renamed {found.name})" in str(found)


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_a_copy_padded_with_statements_that_do_nothing_is_found(name):
    """``pass``, a bare number, assignments no one reads (one feeding the next): padding."""
    tree, function = kernel_tree(name)
    padding = ast.parse("pass\n0\nspare = 1\nmore = spare * 2\nmore += 3\n").body
    function.body[1:1] = padding
    function.body.append(ast.Pass())
    (found,) = originality.copies({"k.py": ast.unparse(tree)}, SOLUTIONS)
    assert found.solution == BY_NAME[name]


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_a_changed_constant_or_statement_is_not_a_copy(name):
    """The same code, and only the same code: a copy edited in what it does is a question for
    a person, not a verdict."""
    tree, function = kernel_tree(name)
    assert len(originality.copies({"k.py": ast.unparse(tree)}, SOLUTIONS)) == 1  # unedited
    constants = [n for n in ast.walk(function) if isinstance(n, ast.Constant)
                 and type(n.value) in (int, float)]  # fmt: skip
    constants[-1].value += 1
    assert originality.copies({"k.py": ast.unparse(tree)}, SOLUTIONS) == []
    tree, function = kernel_tree(name)
    function.body.insert(1, ast.parse("tl.debug_barrier()").body[0])
    assert originality.copies({"k.py": ast.unparse(tree)}, SOLUTIONS) == []


def test_a_copy_spelled_to_slip_past_the_text_filter_is_found():
    """Files are first passed over by their text (the attribute names a copy must read); the
    ways Python lets a name be spelled apart from its dot (a line continuation, a comment
    inside brackets) or in other characters (full-width letters, which Python folds to the
    same identifier) must not hide a copy from it."""
    text = HEADER + decorated(BY_NAME["_add_kernel"])
    assert "tl.load(" in text and ".store(" in text and ".to(" in text
    text = text.replace("tl.load(", "tl.\\\n        load(", 1)
    text = text.replace(".store(", ".\uff53\uff54\uff4f\uff52\uff45(")  # full-width "store"
    assert "(x + y).to(out_ptr" in text
    inside = "(x + y).  # a comment inside the call\n    to(out_ptr"
    text = text.replace("(x + y).to(out_ptr", inside)
    assert "store(" not in text
    (found,) = originality.copies({"kernels/add.py": text}, SOLUTIONS)
    assert found.solution == BY_NAME["_add_kernel"]


def test_a_copy_behind_a_kernel_of_ones_own_is_found_through_the_call():
    """The launched kernel is the learner's, a one-line call of a jit helper that is the
    reference's kernel under another name in another file: the helper is looked at too."""
    helper = HEADER + decorated(
        BY_NAME["_add_kernel"]).replace("def _add_kernel(", "def _helper(")  # fmt: skip
    launched = (
        "import triton\nimport triton.language as tl\nfrom .helpers import _helper\n\n\n"
        "@triton.jit\ndef mine(x, y, out, n, BLOCK: tl.constexpr):\n"
        "    _helper(x, y, out, n, BLOCK)\n"
    )
    sources = {"kernels/add.py": launched, "kernels/helpers.py": helper}
    (found,) = originality.copies(sources, SOLUTIONS, only=["kernels/add.py::mine"])
    assert (found.path, found.name) == ("kernels/helpers.py", "_helper")
    # a copy in a file no launched kernel reaches is not this exercise's business
    assert originality.copies(sources, SOLUTIONS, only=["kernels/other.py::mine"]) == []


def test_own_work_stubs_and_helpers_are_not_copies():
    """The learner's own add kernel (another masking), every exercise as made (TODOs), and the
    reference's files that hold no solution."""
    assert originality.copies({ADD: own_solution(ADD).decode()}, SOLUTIONS) == []
    made = {path: text.decode() for path, text in make_exercises.render().items()
            if path.endswith(".py")}  # fmt: skip
    assert originality.copies(made, SOLUTIONS) == []
    helpers = {p.name: p.read_text() for p in (ROOT / "reference" / "kernels").glob("*.py")
               if not any(s.path.endswith(p.name) for s in SOLUTIONS.values())}  # fmt: skip
    assert helpers and originality.copies(helpers, SOLUTIONS) == []


def test_a_source_that_does_not_parse_is_no_copy_and_no_crash():
    assert originality.copies({"k.py": "def broken(:\n", "j.py": "x" * 3_000_000}, SOLUTIONS) == []


def test_the_checker_gives_a_copied_add_kernel_nothing(tmp_path, monkeypatch):
    """``cp reference/kernels/add.py exercises/kernels/add.py``, the helper import made
    absolute: every check would pass, and the exercise earns nothing, saying what was copied.
    The same package with the copy let through (the course's own tests) earns every point,
    so nothing else failed it."""
    copied = make_exercises.solved(ADD).decode()
    name = copier_package(tmp_path, monkeypatch, {"kernels/add.py": copied})
    report = check_exercise("add", name, extra_path=[tmp_path])
    assert report.points == 0
    failed = "\n".join(c.message for c in report.checks if not c.passed)
    assert "the course's reference kernels, copied" in failed
    assert (f"{name}/kernels/add.py: _add_kernel is the course's _add_kernel from "
            "reference/kernels/add.py") in failed
    assert "write the kernel yourself" in failed
    allowed = check_exercise("add", name, extra_path=[tmp_path], reference_copies=True)
    assert allowed.points == allowed.max_points


def test_the_copy_check_reads_the_files_before_the_learners_code_runs(tmp_path, monkeypatch):
    """A copy whose module rewrites its own file when it is imported (so that the file looks
    like the learner's own by the time the verdict is written) is judged on what was there
    when the checker read it, before any learner code ran."""
    copied = make_exercises.solved(ADD).decode()
    own = own_solution(ADD).decode()
    cover = f"\nfrom pathlib import Path as _Path\n_Path(__file__).write_text({own!r})\n"
    name = copier_package(tmp_path, monkeypatch, {"kernels/add.py": copied + cover})
    report = check_exercise("add", name, extra_path=[tmp_path])
    assert (tmp_path / name / "kernels" / "add.py").read_text() == own  # it did rewrite it
    assert report.points == 0
    assert any("_add_kernel is the course's _add_kernel" in c.message for c in report.checks)
