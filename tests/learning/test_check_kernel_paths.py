"""The paths of a kernel file that no small input takes: does the checker grade them too?

A row kernel walks a row in chunks only past tens of thousands of values, and the RMSNorm
backward splits only past 16384; the checker reaches those paths on small inputs through the
wrappers' own ``plan=`` hook. Each faulty kernel below is a copy of ``reference/kernels/``
with one edit, written into a pytest ``tmp_path`` as a package of its own and graded by name,
the way the checker grades ``exercises``.
"""

from __future__ import annotations

import ast
import re
import shutil
import uuid
from pathlib import Path

import graded_reference  # which worker grades the reference (tests/graded_reference.py)
import pytest
import torch
from test_check_kernels import PROPERTIES, run_only

import learning  # noqa: F401  (chooses the interpreter before triton is imported)
from learning import ops
from learning.check import kernel_hints, kernels

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "reference" / "kernels"


def mutant(tmp_path: Path, monkeypatch, module: str, *edits: tuple[str, str]) -> str:
    """A copy of ``reference/kernels/`` as package ``mutant_<id>``, with each ``(old, new)``
    edit made to ``kernels/<module>.py`` (each ``old`` must occur exactly once: a test whose
    edit no longer applies fails instead of grading the unchanged reference)."""
    package = f"mutant_{uuid.uuid4().hex[:10]}"
    shutil.copytree(REFERENCE, tmp_path / package / "kernels",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    (tmp_path / package / "__init__.py").write_text("import learning  # noqa: F401\n")
    path = tmp_path / package / "kernels" / f"{module}.py"
    text = path.read_text()
    for old, new in edits:
        assert text.count(old) == 1, f"{module}.py: the text to edit is not there once: {old!r}"
        text = text.replace(old, new)
    path.write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    return package


def solution_of(kernel: str, body: str) -> tuple[str, str]:
    """The edit that replaces ``kernel``'s solution region (in the reference) with ``body``."""
    text = (REFERENCE / f"{_module_of(kernel)}.py").read_text()
    start = text.index(f"def {kernel}(")
    region = re.compile(r"    ### BEGIN SOLUTION\n.*?    ### END SOLUTION\n", re.DOTALL)
    found = region.search(text, start)
    return found.group(0), f"    {body}\n"


def _module_of(kernel: str) -> str:
    return next(p.stem for p in REFERENCE.glob("*.py") if f"def {kernel}(" in p.read_text())


def failures(results) -> dict[str, str]:
    """The failed input checks (a path's failure also withholds its part of the properties)."""
    return {r.name: r.message for r in results if not r.passed and r.name not in PROPERTIES}


def earned(results) -> float:
    return sum(r.earned for r in results)


# --------------------------------------------------------------------------- chunked forward


def test_a_stubbed_chunked_forward_fails_its_check_naming_the_kernel(tmp_path, monkeypatch):
    """softmax's chunked kernel reduced to a bare ``return``: every CPU shape holds its rows
    whole, so only the forced chunked plan reaches it. Does that check fail, naming the kernel
    it launched, while the whole-row checks still pass?"""
    package = mutant(tmp_path, monkeypatch, "softmax",
                     solution_of("_softmax_fwd_chunked_kernel", "return"))  # fmt: skip
    results = kernels.run("softmax", package, reference_copies=True)
    failed = failures(results)
    assert list(failed) == ["softmax chunked rows"], failed
    message = failed["softmax chunked rows"]
    assert "softmax_fwd(x, plan=RowPlan(chunked=True, block_cols=32))" in message
    assert "it launched _softmax_fwd_chunked_kernel" in message
    assert "never written" in message
    assert 0 < earned(results) < kernels.points_for("softmax")


def test_pytorch_behind_the_chunked_plan_earns_nothing(tmp_path, monkeypatch):
    """A wrapper that answers a chunked plan with ``torch.softmax``: the outputs are right, but
    no kernel of the learner's computed them. Does the exercise earn nothing, with the reason?"""
    package = mutant(tmp_path, monkeypatch, "softmax", (
        "    plan.check_covers(n_cols, \"softmax\")\n    args = (x, y, n_rows, x.stride(0), "
        "y.stride(0))\n    if plan.chunked:\n",
        "    plan.check_covers(n_cols, \"softmax\")\n    args = (x, y, n_rows, x.stride(0), "
        "y.stride(0))\n    if plan.chunked:\n        return torch.softmax(x.float(), dim=-1)"
        ".to(x.dtype)\n    if plan.chunked:\n",
    ))  # fmt: skip
    results = kernels.run("softmax", package, reference_copies=True)
    assert earned(results) == 0
    assert "the result did not come from your own Triton kernels" in failures(results)[
        "softmax chunked rows"]  # fmt: skip
    assert "no Triton kernel ran" in failures(results)["softmax chunked rows"]


def test_the_width_as_row_stride_in_the_chunked_kernel_is_named(tmp_path, monkeypatch):
    """The chunked kernel steps from row to row by ``N`` instead of ``x_row_stride``: right on
    contiguous rows, wrong where rows lie further apart than their width. Does the chunked
    check fail with a hint that names the row stride?"""
    package = mutant(tmp_path, monkeypatch, "softmax", (
        "    x_row = x_ptr + row * x_row_stride\n    y_row = y_ptr + row * y_row_stride\n"
        "    running_max",
        "    x_row = x_ptr + row * N\n    y_row = y_ptr + row * y_row_stride\n    running_max",
    ))  # fmt: skip
    failed = failures(kernels.run("softmax", package, reference_copies=True))
    assert list(failed) == ["softmax chunked rows"], failed
    assert "row 0 is right and later rows are wrong" in failed["softmax chunked rows"]
    assert "never by N" in failed["softmax chunked rows"]


def test_reductions_without_the_chunk_loop_are_named(tmp_path, monkeypatch):
    """row_sum and row_max that read only the first block of each row (the chunk loop
    removed): right wherever a plan holds the row whole. Do both chunked checks fail, saying
    that only the first columns were reduced?"""
    loop = re.compile(r"    for col_start in tl\.range\(BLOCK, N, BLOCK.*?\n(?=    \w+ = tl\.)",
                      re.DOTALL)  # fmt: skip
    text = (REFERENCE / "reductions.py").read_text()
    edits = [(found.group(0), "") for found in loop.finditer(text)]
    assert len(edits) == 2  # the sum's loop and the max's
    package = mutant(tmp_path, monkeypatch, "reductions", *edits)
    failed = failures(run_only("reductions", package, "sum chunked rows", "max chunked rows"))
    for op in ("sum", "max"):
        message = failed[f"{op} chunked rows"]
        assert "only the first 32 columns of each row: loop over the row" in message
        assert "it launched _row_" in message


# --------------------------------------------------------------------------- backward paths


@pytest.mark.slow
def test_a_chunked_softmax_backward_without_the_row_sum_is_named(tmp_path, monkeypatch):
    """The chunked backward writes ``y * dy`` (no row-sum term); the whole-row backward that
    every CPU shape takes is right. Does the chunked-backward check fail with the hint that
    names the missing term?"""
    package = mutant(tmp_path, monkeypatch, "softmax", (
        "tl.store(dx_row + cols, (y * (dy - dot)).to(dx_ptr.dtype.element_ty), mask=mask)",
        "tl.store(dx_row + cols, (y * dy).to(dx_ptr.dtype.element_ty), mask=mask)",
    ))  # fmt: skip
    failed = failures(kernels.run("softmax_train", package, reference_copies=True))
    assert list(failed) == ["softmax_train chunked backward"], failed
    message = failed["softmax_train chunked backward"]
    assert "it launched _softmax_fwd_kernel, _softmax_bwd_chunked_kernel" in message
    assert "missing the row-sum term" in message


# --------------------------------------------------------------------------- every kernel runs


def _launched_kernels(kernel_file: Path) -> set[str]:
    """The ``@triton.jit`` functions of a file that are launched (not called by another)."""
    tree = ast.parse(kernel_file.read_text())
    jitted = {
        node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)
        and any("jit" in ast.unparse(d) for d in node.decorator_list)
    }  # fmt: skip
    called = {
        node.func.id for function in jitted.values() for node in ast.walk(function)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }  # fmt: skip
    return set(jitted) - called


def _exercises_of(module: str) -> list[str]:
    """The kernel exercises (from the registry) whose ops live in ``module``."""
    return [name for name, specs in ops.exercises().items()
            if any(spec.module == module for spec in specs)]  # fmt: skip


MODULES = sorted({spec.module for specs in ops.exercises().values() for spec in specs})


@pytest.mark.parametrize("module", [
    pytest.param(module, marks=[graded_reference.group_of_module(module)] + ([pytest.mark.slow]
                 if any(ops.exercises()[name][0].training for name in _exercises_of(module))
                 else []))
    for module in MODULES
])  # fmt: skip
def test_every_kernel_of_a_file_is_launched_by_some_check(module, reference_report):
    """Does grading the reference, over every exercise of an op module, launch every kernel
    the module defines? A kernel no check launches is a path a learner writes and nobody
    grades. (A Hopper-only Gluon module is a helper of its own, not an op module.) The runs
    are the ones test_check_kernels.py's reference test grades (``reference_report``)."""
    kernel_file = REPO / "reference" / (module.replace(".", "/") + ".py")
    wanted = {f"kernels/{kernel_file.name}::{name}" for name in _launched_kernels(kernel_file)}
    launched: set[str] = set()
    for exercise in _exercises_of(module):
        assert failures(reference_report(exercise).checks) == {}
        launched |= reference_report.launched[exercise]
    assert wanted - launched == set()


# --------------------------------------------------------------------------- hints


def test_the_row_stride_hint_names_a_kernel_that_steps_by_the_width():
    """On ``torch.randn(37, 1000)[:, :781]``, a softmax that steps from row to row by 781
    reads row 0 right and every later row from the wrong place: is that the hint given?"""
    spec = ops.get("softmax")
    storage = torch.randn(37, 1000)
    x = storage[:, :781]
    as_if_by_width = storage.flatten()[: 37 * 781].view(37, 781)  # row i read at i * 781
    got = torch.softmax(as_if_by_width, dim=-1)
    expected = spec.expected({"x": x})
    from learning import correctness

    verdicts = correctness.compare_all((got,), expected, spec.tolerances[torch.float32],
                                       dtype=torch.float32, labels=("output",))  # fmt: skip
    assert not verdicts[0].passed
    hints = kernel_hints.explain(spec, {"x": x.contiguous()}, (got,), expected, verdicts,
                                 dtype=torch.float32, start_here="",
                                 pads={"x": 1000 - 781})  # fmt: skip
    assert any("row 0 is right and later rows are wrong" in h and "x's rows lie width + 219"
               in h for h in hints), hints  # fmt: skip
    contiguous = kernel_hints.explain(spec, {"x": x.contiguous()}, (got,), expected, verdicts,
                                      dtype=torch.float32, start_here="")
    assert not any("row 0 is right" in h for h in contiguous)  # rows that touch: no such hint
