"""Kernels launched through the course's helpers: whose are they, for the checker and kernel-bench?

``exercises/`` holds only what a learner writes; the helpers (the row plans, the launcher, the
Hopper GEMM's Gluon kernels) stay in ``reference/kernels/`` and the exercises import them from
there. A kernel of the learner's launched through one of them (``Launcher``, a ``RowPlan``'s
grid) must still count as the learner's; a kernel of the reference's, ``@triton.jit`` or
``@gluon.jit``, must not, whoever launches it. Each package below is written into ``tmp_path``
and graded by its name, as ``python -m learning.check`` grades ``exercises``.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

import learning  # noqa: F401  (chooses the interpreter before triton is imported)
from learning import ops
from learning.bench.config import BenchInputError
from learning.bench.learner import prepare_learner
from learning.check import kernels
from learning.check.runner import check_exercise

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import make_exercises  # noqa: E402

NOT_YOURS = "a kernel defined outside your"
GLUON_GEMM = "reference.kernels.cooperative._matmul_cooperative_kernel"


def package(tmp_path: Path, monkeypatch, **modules: str) -> str:
    """A learner package holding ``kernels/<module>.py`` for each module given, and nothing
    else of the course's (no helper beside them)."""
    name = f"learner_{uuid.uuid4().hex[:10]}"
    folder = tmp_path / name / "kernels"
    folder.mkdir(parents=True)
    (tmp_path / name / "__init__.py").write_text("import learning  # noqa: F401\n")
    (folder / "__init__.py").write_text("")
    for module, source in modules.items():
        (folder / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def solved(module: str) -> str:
    """The exercise copy with the reference's solutions left in (its helpers from reference)."""
    return make_exercises.solved(f"exercises/kernels/{module}.py").decode()


def stub(module: str) -> str:
    """The exercise copy as made: its kernels still TODOs."""
    return make_exercises.render()[f"exercises/kernels/{module}.py"].decode()


def grade(exercise: str, name: str, tmp_path: Path):
    """The exercise's report; the reference's solutions (``solved``) are let through, since
    these tests ask whose kernel a helper launched, not whether it was copied."""
    report = check_exercise(exercise, name, extra_path=[tmp_path], reference_copies=True)
    return report, "\n".join(c.message for c in report.checks if not c.passed)


# --------------------------------------------------------------------------- yours, through helpers


@pytest.mark.slow
def test_the_solved_softmax_through_the_course_helpers_earns_every_point(tmp_path, monkeypatch):
    """The softmax exercise solved, launching its kernels through reference.kernels.launch's
    Launcher with reference.kernels.row_plan's plans, in a package with no helper of its own:
    every point."""
    source = solved("softmax")
    assert "from reference.kernels.launch import Launcher, Replays\n" in source
    assert "from reference.kernels.row_plan import RowPlan" in source
    name = package(tmp_path, monkeypatch, softmax=source)
    assert sorted(p.name for p in (tmp_path / name / "kernels").iterdir()) == [
        "__init__.py", "softmax.py"]  # fmt: skip
    report, failed = grade("softmax", name, tmp_path)
    assert failed == ""
    assert report.points == report.max_points == kernels.points_for("softmax")


# ------------------------------------------------------------------ the reference's kernels


# Appended to the exercise as made (its kernels TODOs): the reference's kernels, launched
# through the same Launcher the exercise uses.
COURSE_KERNELS_THROUGH_THE_LAUNCHER = """

from reference.kernels import softmax as _course  # noqa: E402

_launch_fwd = Launcher(_course._softmax_fwd_kernel)
_launch_fwd_chunked = Launcher(_course._softmax_fwd_chunked_kernel)
"""


def test_the_courses_kernels_through_the_course_launcher_earn_nothing(tmp_path, monkeypatch):
    """The exercise's wrapper, unchanged, with its Launchers built on the reference's kernels:
    the results are right and earn nothing, the verdict naming the reference's kernel."""
    name = package(tmp_path, monkeypatch,
                   softmax=stub("softmax") + COURSE_KERNELS_THROUGH_THE_LAUNCHER)  # fmt: skip
    report, failed = grade("softmax", name, tmp_path)
    assert report.points == 0
    assert f"reference.kernels.softmax._softmax_fwd_kernel, {NOT_YOURS} {name}" in failed


CALLS_A_COURSE_KERNEL = """
import torch
import triton
import triton.language as tl

from reference.kernels.softmax import _softmax_fwd_kernel as course_kernel


@triton.jit
def my_kernel(x_ptr, y_ptr, n_rows, x_stride, y_stride, N: tl.constexpr, BLOCK: tl.constexpr):
    course_kernel(x_ptr, y_ptr, n_rows, x_stride, y_stride, N, BLOCK, 1)


def softmax(x):
    y = torch.empty_like(x)
    my_kernel[(x.shape[0],)](x, y, x.shape[0], x.stride(0), y.stride(0), N=x.shape[1],
                             BLOCK=triton.next_power_of_2(x.shape[1]))
    return y
"""


def test_a_kernel_of_yours_that_calls_a_course_kernel_earns_nothing(tmp_path, monkeypatch):
    """A @triton.jit of the learner's whose body calls the reference's kernel: refused when the
    kernels are read, so nothing is graded, and the reason names the reference."""
    name = package(tmp_path, monkeypatch, softmax=CALLS_A_COURSE_KERNEL)
    report, failed = grade("softmax", name, tmp_path)
    assert report.points == 0
    assert "your kernels cannot be replayed" in failed
    assert ("course_kernel is imported from reference.kernels.softmax, the course's reference"
            in failed)


# --------------------------------------------------------------------------- the Hopper GEMM path

# What `_launch_persistent` does with a 16-bit product on a Hopper GPU: hand it to the course's
# Gluon kernel. A CPU has no Gluon: the launch is recorded, then fails, and the learner's own
# kernels compute the product, so what is decided is what the launch of the course's kernel
# alone does to the verdict.
HOPPER_HAND_OFF = """

from reference.kernels import cooperative as _hopper  # noqa: E402

_own_matmul = matmul


def _hand_off(a, b):
    c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    descriptors = _hopper._descriptors(a, b, c)
    _hopper._matmul_cooperative_kernel[(1,)](*descriptors.values(),
                                             **_hopper._constexprs(a, b, 1), num_warps=4)


def matmul(a, b):
    if a.dtype in (torch.float16, torch.bfloat16):
        try:
            _hand_off(a, b)
        except Exception:  # no Gluon on a CPU, or operands no descriptor takes
            pass
    return _own_matmul(a, b)
"""


@pytest.mark.slow
def test_the_checker_gives_nothing_for_a_product_of_the_hopper_gluon_kernel(tmp_path,
                                                                             monkeypatch):
    """A matmul whose 16-bit products launch the course's Gluon kernel (cooperative.py), as
    the exercise's does on a Hopper GPU: the exercise earns nothing, the verdict naming it (the
    replay stops at its first argument, a tensor descriptor, which no trace holds)."""
    name = package(tmp_path, monkeypatch, matmul=solved("matmul") + HOPPER_HAND_OFF)
    report, failed = grade("matmul", name, tmp_path)
    assert report.points == 0
    assert "not graded: the result did not come from your own Triton kernels" in failed
    assert f"(outside:{GLUON_GEMM}), argument a_desc" in failed


def test_kernel_bench_fails_the_learners_product_of_the_hopper_gluon_kernel(tmp_path,
                                                                            monkeypatch):
    """kernel-bench --impl learner on that path: the 16-bit case's learner variant is failed,
    its reason naming the course's kernel; the fp32 case, which the kernel never takes, is
    timed."""
    name = package(tmp_path, monkeypatch, matmul=solved("matmul") + HOPPER_HAND_OFF)
    spec = ops.get("matmul")
    selection = [(spec, (24, 40, 32), "float16"), (spec, (24, 40, 32), "float32")]
    learner = prepare_learner(selection, name, seed=5, device="cpu")
    half, single = (learner.cases[("matmul", (24, 40, 32), dtype)]
                    for dtype in ("float16", "float32"))  # fmt: skip
    assert half.call is None and f"{GLUON_GEMM}, {NOT_YOURS} {name}" in half.reason
    assert single.reason is None and single.call is not None
    assert any(path.as_posix().endswith("reference/kernels/cooperative.py")
               for path in learner.files), "the course's file the learner's call loaded"


# --------------------------------------------------------------------------- a file from before


def before_the_move(module: str) -> str:
    """The exercise solved while the helpers were copied: the reference with its relative
    imports (``from .row_plan import ...``), under the copy's header."""
    source = f"reference/kernels/{module}.py"
    return make_exercises.header(source) + (ROOT / source).read_text()


def test_the_checker_names_the_move_when_a_helper_import_fails(tmp_path, monkeypatch):
    """A solved add.py that imports .row_plan from a package that no longer holds it: every
    check says where the helper is and the import to write."""
    name = package(tmp_path, monkeypatch, add=before_the_move("add"))
    report, failed = grade("add", name, tmp_path)
    assert report.points == 0
    assert f"No module named '{name}.kernels.row_plan'" in failed
    assert (f"{name}.kernels.row_plan is the course's helper reference.kernels.row_plan now, no "
            f"longer copied into {name}/: write `from reference.kernels.row_plan import ...` "
            "for `from .row_plan import ...` in your file") in failed


def test_kernel_bench_names_the_move_when_a_helper_import_fails(tmp_path, monkeypatch):
    """The same file under kernel-bench --impl learner: one line, with the import to write."""
    name = package(tmp_path, monkeypatch, matmul=before_the_move("matmul"))
    with pytest.raises(BenchInputError) as raised:
        prepare_learner([(ops.get("matmul"), (8, 8, 8), "float32")], name, seed=1, device="cpu")
    message = str(raised.value)
    assert len(message.splitlines()) == 1
    assert "write `from reference.kernels import cooperative` for `from . import cooperative`" \
        in message


def test_an_unrelated_import_error_gets_no_such_line():
    """Is the line given only for a helper of the course: not for an exercise's own module
    (add.py deleted), a module the course never had, or another package?"""
    from learning.check.replay.extract import moved_helper

    assert moved_helper("No module named 'exercises.kernels.row_plan'", "exercises")
    for message, package_name in [
        ("No module named 'exercises.kernels.add'", "exercises"),
        ("No module named 'exercises.kernels.plans'", "exercises"),
        ("No module named 'exercises.kernels.row_plan'", "mine"),
        ("cannot import name 'softmax' from 'exercises.kernels' (x/__init__.py)", "exercises"),
        ("No module named 'numpi'", "exercises"),
    ]:
        assert moved_helper(message, package_name) is None, message
    assert "from reference.kernels import cooperative" in moved_helper(
        "cannot import name 'cooperative' from 'exercises.kernels' (x/__init__.py)", "exercises")
