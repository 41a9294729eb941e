"""The honest corpus: learners' own solutions, each of which must keep its full marks.

Every file under ``solutions/`` is a solution a learner could hand in, written the ways
learners write them: whole rows and chunks, one pass and two, tiles of several rows, block
sizes of 64 to 512, float32 accumulation with a cast at the end, wrappers that make their
inputs contiguous, autograd Functions with Triton backwards, the matmul exercise's own TODO
path, and pure-Python answers to the foundations, measurement and harness exercises written
unlike the reference's. None copies a known answer. A solution is either a whole learner file
(``whole``) or the functions a learner wrote into the exercise as ``scripts/make_exercises.py``
makes it (``into_exercise``: each function of the file replaces the exercise's function of
that name, and imports the exercise lacks are added).

``tests/honest/test_honest_solutions.py`` grades each one as the grader grades a hand-in, and
for each kernel also takes a kernel-bench report in a learner's clone and has the grader
validate it. A rule of the checker that refuses honest work fails here first.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = Path(__file__).with_name("solutions")
sys.path.insert(0, str(ROOT / "scripts"))
import make_exercises  # noqa: E402


@dataclass(frozen=True)
class Solution:
    name: str  # its file: solutions/<name>.py
    path: str  # the learner's file it is, e.g. exercises/kernels/softmax.py
    exercises: tuple[str, ...]  # the exercises it is graded on (full marks in each)
    bench: tuple[str, ...] = ()  # kernel-bench's --op, --shape and --dtype for its report
    into_exercise: bool = False  # only the functions the learner wrote (see the docstring)

    def source(self, root: Path = ROOT) -> bytes:
        """The learner's file, as it would be handed in from a clone of ``root``."""
        text = (SOLUTIONS / f"{self.name}.py").read_text(encoding="utf-8")
        if not self.into_exercise:
            return text.encode()
        exercise = make_exercises.render(root)[self.path].decode()
        return written_into(exercise, text).encode()


def written_into(exercise: str, functions: str) -> str:
    """``exercise`` with each top-level function (or class) of ``functions`` put in place of
    the one of the same name, and the imports of ``functions`` it lacks added after its own."""
    tree, patch = ast.parse(exercise), ast.parse(functions)
    patch_lines = functions.splitlines(keepends=True)
    written = {}
    imports = []
    for node in patch.body:
        segment = "".join(patch_lines[_first_line(node) - 1 : node.end_lineno])
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            written[node.name] = segment
        elif isinstance(node, ast.Import | ast.ImportFrom):
            if segment not in exercise:
                imports.append(segment)
        elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            raise AssertionError(f"line {node.lineno}: only imports, functions and classes are "
                                 "written into an exercise")  # fmt: skip
    lines = exercise.splitlines(keepends=True)
    for node in reversed(tree.body):
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in written:
            lines[_first_line(node) - 1 : node.end_lineno] = [written.pop(node.name)]
    if written:
        raise AssertionError(f"the exercise has no function {', '.join(written)}: update the "
                             "corpus to the exercise as it is now")  # fmt: skip
    last_import = max(node.end_lineno for node in tree.body
                      if isinstance(node, ast.Import | ast.ImportFrom))  # fmt: skip
    lines[last_import:last_import] = imports
    return "".join(lines)


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


ADD = "exercises/kernels/add.py"
REDUCTIONS = "exercises/kernels/reductions.py"
SOFTMAX = "exercises/kernels/softmax.py"
RMSNORM = "exercises/kernels/rmsnorm.py"
MATMUL = "exercises/kernels/matmul.py"
ATTENTION = "exercises/kernels/attention.py"


def _bench(op: str, shape: str, dtype: str) -> tuple[str, ...]:
    return ("--op", op, "--shape", *shape.split("x"), "--dtype", dtype)


KERNELS = (
    Solution("add_masked_blocks", ADD, ("add",), _bench("add", "16x256", "float32"),
             into_exercise=True),
    Solution("add_grid_stride", ADD, ("add",), _bench("add", "16x256", "float16")),
    Solution("add_rows", ADD, ("add",), _bench("add", "16x256", "bfloat16")),
    Solution("reductions_whole_row", REDUCTIONS, ("reductions",),
             _bench("sum", "16x256", "float16")),
    Solution("reductions_tiles", REDUCTIONS, ("reductions",), _bench("max", "16x256", "float32")),
    Solution("softmax_contiguous", SOFTMAX, ("softmax",), _bench("softmax", "16x256", "float32")),
    Solution("softmax_fp32_cast", SOFTMAX, ("softmax",), _bench("softmax", "16x256", "float16")),
    Solution("softmax_online", SOFTMAX, ("softmax",), _bench("softmax", "16x256", "bfloat16")),
    Solution("softmax_row_tiles", SOFTMAX, ("softmax",), _bench("softmax", "37x781", "float16")),
    Solution("softmax_exp2", SOFTMAX, ("softmax",), _bench("softmax", "16x256", "float32")),
    Solution("softmax_three_pass", SOFTMAX, ("softmax",), _bench("softmax", "16x256", "float16")),
    Solution("softmax_train_autograd", SOFTMAX, ("softmax_train",),
             _bench("softmax_train", "16x256", "float16")),
    Solution("softmax_train_chunked", SOFTMAX, ("softmax_train",),
             _bench("softmax_train", "16x256", "float32")),
    Solution("rmsnorm_whole_row", RMSNORM, ("rmsnorm",), _bench("rmsnorm", "16x256", "float16")),
    Solution("rmsnorm_chunks", RMSNORM, ("rmsnorm",), _bench("rmsnorm", "16x256", "bfloat16")),
    Solution("rmsnorm_train_autograd", RMSNORM, ("rmsnorm_train",),
             _bench("rmsnorm_train", "16x256", "float32")),
    Solution("matmul_todo_path", MATMUL, ("matmul",), _bench("matmul", "75x93x61", "float16"),
             into_exercise=True),
    Solution("matmul_simple_tiles", MATMUL, ("matmul",), _bench("matmul", "64x64x64", "float32")),
    Solution("matmul_contiguous_operands", MATMUL, ("matmul",),
             _bench("matmul", "75x93x61", "bfloat16")),
    Solution("matmul_train_todo_path", MATMUL, ("matmul_train",),
             _bench("matmul_train", "75x93x61", "float16"), into_exercise=True),
    Solution("matmul_train_own_kernels", MATMUL, ("matmul_train",),
             _bench("matmul_train", "64x64x64", "float32")),
    Solution("attention_one_masked_walk", ATTENTION, ("attention", "attention_train"),
             _bench("attention_causal", "1x2x67x64", "float16"), into_exercise=True),
)


def _foundations(name: str, module: str, exercise: str) -> Solution:
    return Solution(name, f"exercises/foundations/{module}.py", (exercise,), into_exercise=True)


PYTHON = (
    _foundations("tensors_by_loops", "bytes_and_layout", "tensors"),
    _foundations("tensors_from_torch", "bytes_and_layout", "tensors"),
    _foundations("oracles_through_float32", "oracles", "oracles"),
    _foundations("rounding_with_numpy", "rounding", "rounding"),
    _foundations("stable_softmax_by_hand", "stable_softmax", "stable_softmax"),
    _foundations("rmsnorm_semantics_counted", "rmsnorm_semantics", "rmsnorm_semantics"),
    _foundations("gemm_arithmetic_tiles", "gemm_arithmetic", "gemm_arithmetic"),
    _foundations("gemm_arithmetic_k_outer", "gemm_arithmetic", "gemm_arithmetic"),
    Solution("measurement_statistics", "exercises/measurement.py", ("measurement",),
             into_exercise=True),
    Solution("measurement_by_hand", "exercises/measurement.py", ("measurement",),
             into_exercise=True),
    Solution("harness_from_the_todos", "exercises/harness.py", ("harness",), into_exercise=True),
)
