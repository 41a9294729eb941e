# Your copy of reference/foundations/oracles.py,
# made by scripts/make_exercises.py with the solution regions replaced by TODOs.
# This file is yours to edit; `python -m learning.check <exercise>` grades it.
# (Maintainers: edit the reference and rerun the script, never this copy.)
"""Lesson 02: elementwise add and float64 oracles.

Every output in this course is judged against an *oracle*: the same operation computed in
float64 from the very same (already rounded) inputs. float64 carries 53 significant bits, so
for these sizes its own error is far below anything a 16- or 32-bit kernel can reach; the
difference between a kernel and the oracle is the kernel's error.

"Close enough" is the op registry's per-dtype :class:`~learning.ops.Tolerance`, applied
element by element as ``|out - ref| <= atol * max|ref| + rtol * |ref|``. The ``atol`` part is
scaled by the output's largest magnitude on purpose: with a plain absolute ``atol``, data that
happens to be tiny would let an output of zeros pass.
"""

from __future__ import annotations

import torch

from learning import ops
from learning.ops import Tolerance


def numpy_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``x + y`` computed by NumPy, returned as a torch tensor of the inputs' dtype.

    NumPy has float16 and float32 but no bfloat16: add bfloat16 inputs in float32 and round the
    sum back to bfloat16 once. (Rounding the exact sum of two bfloat16 numbers through float32
    gives the same answer as rounding it directly: float32 has more than twice the bits.)
    """
    # TODO: x.numpy() fails for bfloat16; go through float32 there, and return x.dtype
    raise NotImplementedError(
        "exercises/foundations/oracles.py:numpy_add: x.numpy() fails for bfloat16; go through "
        "float32 there, and return x.dtype"
    )


def add_oracle(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The float64 oracle of ``x + y``: convert each input to float64 first, then add."""
    # TODO: cast BEFORE adding; (x + y).double() only re-labels the rounded fp16 sum
    raise NotImplementedError(
        "exercises/foundations/oracles.py:add_oracle: cast BEFORE adding; (x + y).double() only "
        "re-labels the rounded fp16 sum"
    )


def add_tolerance(dtype: torch.dtype) -> Tolerance:
    """The tolerance the course allows an ``add`` output of ``dtype``: read it from the registry."""
    # TODO: ops.get("add") is the add OpSpec; its .tolerances maps a dtype to a Tolerance
    raise NotImplementedError(
        "exercises/foundations/oracles.py:add_tolerance: ops.get(\"add\") is the add OpSpec; its "
        ".tolerances maps a dtype to a Tolerance"
    )


def within_tolerance(actual: torch.Tensor, expected: torch.Tensor, tolerance: Tolerance) -> bool:
    """Whether every element has ``|actual - expected| <= atol*max|expected| + rtol*|expected|``.

    Work in float64. A NaN or Inf in ``actual`` never passes. When ``expected`` is all zeros
    use a scale of 1 (there is nothing to be relative to).
    """
    # TODO: scale = max|expected| (1.0 if that is 0); bound = atol*scale + rtol*|expected|
    raise NotImplementedError(
        "exercises/foundations/oracles.py:within_tolerance: scale = max|expected| (1.0 if that is "
        "0); bound = atol*scale + rtol*|expected|"
    )


def all_zeros_tolerance_used(dtype: torch.dtype) -> float:
    """How many times over its bound an all-zeros output misses, for an ``add`` of ``dtype``.

    The checker reports ``tolerance_used = max(|error| / bound)``: 1.0 sits exactly on the
    tolerance. Work it out on paper for any non-zero oracle, then express it with the add
    tolerance's ``atol`` and ``rtol``. (Hint: the worst element is the largest ``|ref|``.)
    """
    # TODO: at the element where |ref| = max|ref| = s, the error is s and the bound is ...
    raise NotImplementedError(
        "exercises/foundations/oracles.py:all_zeros_tolerance_used: at the element where |ref| = "
        "max|ref| = s, the error is s and the bound is ..."
    )
