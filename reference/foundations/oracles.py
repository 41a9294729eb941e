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
    ### BEGIN SOLUTION
    ### TODO: x.numpy() fails for bfloat16; go through float32 there, and return x.dtype
    if x.dtype == torch.bfloat16:
        total = x.float().numpy() + y.float().numpy()
        return torch.from_numpy(total).to(torch.bfloat16)
    return torch.from_numpy(x.numpy() + y.numpy())
    ### END SOLUTION


def add_oracle(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The float64 oracle of ``x + y``: convert each input to float64 first, then add."""
    ### BEGIN SOLUTION
    ### TODO: cast BEFORE adding; (x + y).double() only re-labels the rounded fp16 sum
    return x.double() + y.double()
    ### END SOLUTION


def add_tolerance(dtype: torch.dtype) -> Tolerance:
    """The tolerance the course allows an ``add`` output of ``dtype``: read it from the registry."""
    ### BEGIN SOLUTION
    ### TODO: ops.get("add") is the add OpSpec; its .tolerances maps a dtype to a Tolerance
    return ops.get("add").tolerances[dtype]
    ### END SOLUTION


def within_tolerance(actual: torch.Tensor, expected: torch.Tensor, tolerance: Tolerance) -> bool:
    """Whether every element has ``|actual - expected| <= atol*max|expected| + rtol*|expected|``.

    Work in float64. A NaN or Inf in ``actual`` never passes. When ``expected`` is all zeros
    use a scale of 1 (there is nothing to be relative to).
    """
    ### BEGIN SOLUTION
    ### TODO: scale = max|expected| (1.0 if that is 0); bound = atol*scale + rtol*|expected|
    got = actual.double()
    ref = expected.double()
    if not bool(torch.isfinite(got).all()):
        return False
    scale = float(ref.abs().max()) if ref.numel() else 1.0
    scale = scale if scale > 0 else 1.0
    bound = tolerance.atol * scale + tolerance.rtol * ref.abs()
    return bool(((got - ref).abs() <= bound).all())
    ### END SOLUTION


def all_zeros_tolerance_used(dtype: torch.dtype) -> float:
    """How many times over its bound an all-zeros output misses, for an ``add`` of ``dtype``.

    The checker reports ``tolerance_used = max(|error| / bound)``: 1.0 sits exactly on the
    tolerance. Work it out on paper for any non-zero oracle, then express it with the add
    tolerance's ``atol`` and ``rtol``. (Hint: the worst element is the largest ``|ref|``.)
    """
    ### BEGIN SOLUTION
    ### TODO: at the element where |ref| = max|ref| = s, the error is s and the bound is ...
    tolerance = add_tolerance(dtype)
    return 1.0 / (tolerance.atol + tolerance.rtol)
    ### END SOLUTION
