# Your copy of reference/foundations/stable_softmax.py,
# made by scripts/make_exercises.py with the solution regions replaced by TODOs.
# This file is yours to edit; `python -m learning.check <exercise>` grades it.
# (Maintainers: edit the reference and rerun the script, never this copy.)
"""Lesson 04: softmax and numerical stability.

``softmax(x)_j = exp(x_j) / sum_k exp(x_k)`` over the last dimension. Written literally it
breaks long before the answer does: ``exp`` overflows float16 at ``x = 12`` (the largest
float16 is 65504) and float32 at ``x = 89``, and ``inf / inf`` is NaN; very negative rows
underflow to ``0 / 0``. Subtracting the row maximum first changes nothing mathematically
(the factor ``exp(-max)`` cancels) but makes the largest exponent ``exp(0) = 1``: no overflow,
and the sum is at least 1, so no division by zero.

The same trick gives a stable log-sum-exp, ``log(sum(exp(x))) = m + log(sum(exp(x - m)))``.
"""

from __future__ import annotations

import math

import torch


def naive_softmax(x: torch.Tensor) -> torch.Tensor:
    """``exp(x) / exp(x).sum(-1)`` literally, in ``x.dtype``: no max subtraction, no upcast.

    Kept to show the failure; the checker expects it to overflow where the math says it must.
    """
    # TODO: exactly the formula, over dim=-1 with keepdim=True, and nothing more
    raise NotImplementedError(
        "exercises/foundations/stable_softmax.py:naive_softmax: exactly the formula, over dim=-1 "
        "with keepdim=True, and nothing more"
    )


def stable_softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension that never overflows: subtract the row max, work in float32.

    Returns ``x.dtype``.
    """
    # TODO: x.float(); subtract its amax(dim=-1, keepdim=True); exp; divide by the row sum
    raise NotImplementedError(
        "exercises/foundations/stable_softmax.py:stable_softmax: x.float(); subtract its "
        "amax(dim=-1, keepdim=True); exp; divide by the row sum"
    )


def logsumexp(x: torch.Tensor) -> torch.Tensor:
    """``log(sum(exp(x)))`` over the last dimension, stable for any finite ``x``; returns x.dtype.

    Use ``m + log(sum(exp(x - m)))`` with ``m`` the row maximum, in float32.
    """
    # TODO: keep m = row max (keepdim=True) to shift, and add it back after the log
    raise NotImplementedError(
        "exercises/foundations/stable_softmax.py:logsumexp: keep m = row max (keepdim=True) to "
        "shift, and add it back after the log"
    )


def exp_overflow_threshold(dtype: torch.dtype) -> int:
    """The smallest integer ``n`` for which ``exp(n)`` is ``inf`` in ``dtype``.

    12 for float16: exp(11) = 59874 fits under 65504, exp(12) = 162755 does not. Compute it
    from ``torch.finfo(dtype).max`` rather than by trying values.
    """
    # TODO: exp(n) > max  <=>  n > log(max); the smallest such integer is floor(log(max)) + 1
    raise NotImplementedError(
        "exercises/foundations/stable_softmax.py:exp_overflow_threshold: exp(n) > max  <=>  n > "
        "log(max); the smallest such integer is floor(log(max)) + 1"
    )


# Rows given to naive_softmax in float16. Predict before you run them.
PROBE_ROWS: dict[str, list[float]] = {
    "a": [1.0, 2.0, 3.0],
    "b": [-20.0, -30.0, -25.0],
    "c": [12.0, 0.0, 0.0],
    "d": [11.0, 11.0, 11.0],
    "e": [-3.0, 0.0, 5.0],
}


def naive_fp16_wrong_rows() -> str:
    """The keys of PROBE_ROWS whose float16 naive softmax is wrong (NaN, or far from the oracle).

    Return the letters in any order, e.g. ``"ae"``.
    """
    # TODO: per row: does one exp pass 65504? do all exps underflow to 0? does their sum overflow?
    raise NotImplementedError(
        "exercises/foundations/stable_softmax.py:naive_fp16_wrong_rows: per row: does one exp pass "
        "65504? do all exps underflow to 0? does their sum overflow?"
    )
