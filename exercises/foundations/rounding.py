# Your copy of reference/foundations/rounding.py,
# made by scripts/make_exercises.py with the solution regions replaced by TODOs.
# This file is yours to edit; `python -m learning.check <exercise>` grades it.
# (Maintainers: edit the reference and rerun the script, never this copy.)
"""Lesson 03: reductions and floating-point error.

Adding two floating-point numbers rounds the exact sum to the nearest representable value, an
error of at most one *unit roundoff* ``u`` relative to the result: ``u = 2^-11`` for float16,
``2^-8`` for bfloat16, ``2^-24`` for float32 (half the gap between 1 and the next number,
``torch.finfo(dtype).eps / 2``). A sum of ``n`` values rounds ``n - 1`` times, and *where* it
rounds decides how the errors pile up:

* sequential, float16 accumulator: the running sum grows, each addition loses up to ``u`` of
  it, and small terms can vanish altogether (the bound grows like ``n * u``);
* sequential, float32 accumulator: the same order, but ``u`` is 8192 times smaller; round to
  float16 once at the end;
* pairwise (a tree): each value takes part in only about ``log2(n)`` roundings.

A maximum is different: it only compares and returns one of its inputs, so it is exact.
"""

from __future__ import annotations

import numpy as np
import torch


def unit_roundoff(dtype: torch.dtype) -> float:
    """The largest relative error of one rounding to ``dtype``: 2^-11 for float16."""
    # TODO: torch.finfo(dtype).eps is the gap after 1.0; rounding to nearest errs by half a gap
    raise NotImplementedError(
        "exercises/foundations/rounding.py:unit_roundoff: torch.finfo(dtype).eps is the gap after "
        "1.0; rounding to nearest errs by half a gap"
    )


def sequential_sum_fp16(x: torch.Tensor) -> torch.Tensor:
    """Sum a 1-D float16 tensor left to right, rounding the running sum to float16 after each add.

    Returns a 0-d float16 tensor. (``np.float16`` scalars round after every operation.)
    """
    # TODO: keep the accumulator a np.float16 and loop over x.numpy() from left to right
    raise NotImplementedError(
        "exercises/foundations/rounding.py:sequential_sum_fp16: keep the accumulator a np.float16 "
        "and loop over x.numpy() from left to right"
    )


def sequential_sum_fp32(x: torch.Tensor) -> torch.Tensor:
    """Sum a 1-D float16 tensor left to right in a float32 accumulator; round to float16 once.

    Returns a 0-d float16 tensor.
    """
    # TODO: the same loop with a np.float32 accumulator (or np.cumsum(..., dtype=np.float32)[-1])
    raise NotImplementedError(
        "exercises/foundations/rounding.py:sequential_sum_fp32: the same loop with a np.float32 "
        "accumulator (or np.cumsum(..., dtype=np.float32)[-1])"
    )


def pairwise_sum_fp16(x: torch.Tensor) -> torch.Tensor:
    """Sum a 1-D float16 tensor as a tree, every partial sum rounded to float16.

    The tree is fixed so that everyone gets the same bits: an empty tensor sums to 0, one
    element to itself; otherwise split at ``h = len(x) // 2``, sum ``x[:h]`` and ``x[h:]``
    the same way, and add the two halves (rounding to float16). Returns a 0-d float16 tensor.
    """
    # TODO: recursion: two base cases, then split at len(x) // 2 and add the halves in fp16
    raise NotImplementedError(
        "exercises/foundations/rounding.py:pairwise_sum_fp16: recursion: two base cases, then split"
        " at len(x) // 2 and add the halves in fp16"
    )


def relative_error(value: torch.Tensor, x: torch.Tensor) -> float:
    """``|value - exact| / |exact|`` where ``exact`` is the float64 sum of ``x`` (the oracle)."""
    # TODO: the oracle is x.double().sum(); compare in float64, not in the value's dtype
    raise NotImplementedError(
        "exercises/foundations/rounding.py:relative_error: the oracle is x.double().sum(); compare "
        "in float64, not in the value's dtype"
    )


def fp16_ones_plateau() -> int:
    """Add 1.0 to a float16 running sum, starting from 0, many thousand times: where does it stop?

    Return the value the sequential float16 sum of 10 000 ones ends at. Predict it from the
    spacing of float16 numbers before you run anything.
    """
    # TODO: float16 has 11 significant bits; above 2^11 the gap between numbers is 2
    raise NotImplementedError(
        "exercises/foundations/rounding.py:fp16_ones_plateau: float16 has 11 significant bits; "
        "above 2^11 the gap between numbers is 2"
    )


MAX_IS_EXACT_CHOICES = {
    "a": "the max is computed in float32 internally, and float32 has enough bits",
    "b": "the max only compares values and returns one of its inputs, so nothing is rounded",
    "c": "the max of a row is always small, so its rounding error is small",
    "d": "comparisons are done in float64",
}


def why_max_is_exact() -> str:
    """Why a float16 row max equals the float64 oracle exactly: a key of MAX_IS_EXACT_CHOICES."""
    # TODO: does max ever produce a number that was not already one of its inputs?
    raise NotImplementedError(
        "exercises/foundations/rounding.py:why_max_is_exact: does max ever produce a number that "
        "was not already one of its inputs?"
    )
