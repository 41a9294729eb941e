"""A learner's own solution, for the tests that grade an honest learner from end to end.

The checker and the grader refuse a kernel copied from ``reference/``
(:mod:`learning.check.originality`), so the reference's solutions (``make_exercises.solved``)
stand for a copying learner, not an honest one. An honest learner writes the kernel in their
own way: here, the add kernel with one masked path for every block, where the reference takes
an unmasked branch for full blocks.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import make_exercises  # noqa: E402

ADD = "exercises/kernels/add.py"
_ADD_TODO = (
    "    # TODO: add BLOCK elements per program; load without a mask when the block is full\n"
    "    pass\n"
)
_ADD_BODY = """\
    first = tl.program_id(0).to(tl.int64) * BLOCK
    index = first + tl.arange(0, BLOCK)
    inside = index < n_elements
    left = tl.load(x_ptr + index, mask=inside, other=0.0).to(tl.float32)
    right = tl.load(y_ptr + index, mask=inside, other=0.0).to(tl.float32)
    tl.store(out_ptr + index, (left + right).to(out_ptr.dtype.element_ty), mask=inside)
"""
OWN = {ADD: (_ADD_TODO, _ADD_BODY)}


def own_solution(path: str, root: Path = ROOT) -> bytes:
    """The learner's copy of ``path`` (one of ``OWN``) as made from ``root``'s reference, with
    the learner's own code where its TODOs were."""
    todo, body = OWN[path]
    stub = make_exercises.render(root)[path].decode()
    if stub.count(todo) != 1:
        raise AssertionError(f"{path}: the exercise's TODO changed; update tests/own_work.py")
    return stub.replace(todo, body).encode()


def copier_package(tmp_path: Path, monkeypatch, files: dict[str, str]) -> str:
    """A package of a learner's files (``{"kernels/add.py": text}``) under ``tmp_path``, put on
    ``sys.path``; its name, fresh each time."""
    import uuid

    name = f"copier_{uuid.uuid4().hex[:10]}"
    (tmp_path / name / "kernels").mkdir(parents=True)
    (tmp_path / name / "__init__.py").write_text("import learning  # noqa: F401\n")
    (tmp_path / name / "kernels" / "__init__.py").write_text("")
    for path, text in files.items():
        folder = (tmp_path / name / path).parent
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "__init__.py").touch()
        (tmp_path / name / path).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


# A whole add module as a learner may write it first: one masked path, and the sum taken in the
# loads' own dtype (no upcast to float32). Right on a GPU in every dtype.
PLAIN_ADD_MODULE = '''"""A tiny Triton kernel: runs in the interpreter on the CPU."""
import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    _add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out
'''
