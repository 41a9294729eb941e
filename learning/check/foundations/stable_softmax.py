"""Checks of Lesson 04 (softmax and numerical stability): ``stable_softmax``

Graded as exercise ``stable_softmax``; see :mod:`learning.check.foundations`.
"""

from __future__ import annotations

import math
import random

import torch

from learning import ops
from learning.check.foundations.support import (
    Check,
    Learner,
    fail,
    show,
)
from learning.correctness import compare


def _check_naive(learner: Learner, rng: random.Random) -> None:
    spec = ops.get("softmax")
    x = spec.inputs((37, 781), torch.float32, seed=rng.randrange(2**31))["x"]
    verdict = compare(
        learner.naive_softmax(x),
        spec.expected({"x": x})[0],
        spec.tolerances[torch.float32],
        dtype=torch.float32,
    )
    if not verdict.passed:
        fail(
            "x: float32 (37, 781), random normal",
            "softmax within tolerance",
            verdict.reason,
            "exp(x) / exp(x).sum(dim=-1, keepdim=True): normalize each row",
        )
    for row, dtype in (([12.0, 0.0, 0.0], torch.float16), ([100.0, 0.0, 0.0], torch.float32)):
        got = learner.naive_softmax(torch.tensor([row], dtype=dtype))
        if bool(torch.isfinite(got).all()):
            fail(
                f"naive_softmax of [{row}] in {show(dtype)}",
                "NaN (exp overflows, inf/inf)",
                got.tolist(),
                "naive_softmax stays naive: no max subtraction, no upcast; "
                "it exists to show the failure that stable_softmax fixes",
            )


def _softmax_cases(rng: random.Random, dtype: torch.dtype) -> list[tuple[str, torch.Tensor]]:
    spec = ops.get("softmax")
    scale = rng.choice([30.0, 200.0, 1000.0])
    shape = rng.choice(spec.cpu_shapes)
    x = spec.inputs(shape, dtype, seed=rng.randrange(2**31))["x"]
    probe = torch.tensor(_PROBE_ROWS, dtype=dtype)
    return [
        (f"x: {show(x)}, random normal", x),
        (f"x: {show(x)}, random normal times {scale:g}", (x.float() * scale).to(dtype)),
        (f"x: the rows of PROBE_ROWS in {show(dtype)}", probe),
    ]


# Rows that break the naive formula in float16: overflow, underflow, an overflowing sum.
_PROBE_ROWS = [[1.0, 2.0, 3.0], [-20.0, -30.0, -25.0], [12.0, 0.0, 0.0], [11.0, 11.0, 11.0]]


def _check_stable(learner: Learner, rng: random.Random) -> None:
    spec = ops.get("softmax")
    for dtype in spec.dtypes:
        for label, x in _softmax_cases(rng, dtype):
            got = learner.stable_softmax(x)
            verdict = compare(got, spec.expected({"x": x})[0], spec.tolerances[dtype], dtype=dtype)
            if verdict.passed:
                continue
            hint = "subtract the row max, compute in float32, divide by the row sum, cast back"
            if "non-finite" in verdict.reason:
                hint = "exp overflowed: subtract x.amax(dim=-1, keepdim=True) before exp"
            elif isinstance(got, torch.Tensor) and got.shape == x.shape and got.dtype == dtype:
                row_sums = got.double().sum(dim=-1)
                if not torch.allclose(row_sums, torch.ones_like(row_sums), atol=1e-2):
                    hint = "each row must sum to 1: reduce over dim=-1 with keepdim=True"
            fail(label, "softmax within the registry's tolerance", verdict.reason, hint)


def _check_logsumexp(learner: Learner, rng: random.Random) -> None:
    spec = ops.get("softmax")  # logsumexp is softmax's normalizer: judged with its tolerances
    for dtype in (torch.float32, torch.bfloat16):
        for label, x in _softmax_cases(rng, dtype):
            got = learner.logsumexp(x)
            want = torch.logsumexp(x.double(), dim=-1)
            verdict = compare(got, want, spec.tolerances[dtype], dtype=dtype)
            if verdict.passed:
                continue
            hint = "m + log(sum(exp(x - m))) with m the row max, in float32"
            if "non-finite" in verdict.reason:
                hint = "exp overflowed: " + hint
            elif isinstance(got, torch.Tensor) and got.shape != want.shape:
                hint = "one value per row: shape (M,); squeeze the kept dimension"
            elif isinstance(got, torch.Tensor) and torch.allclose(
                got.double(), want - x.double().amax(dim=-1), atol=0.1, rtol=0.01
            ):
                hint = "add the row max back after the log"
            fail(label, "logsumexp within tolerance of float64", verdict.reason, hint)


def _check_overflow_threshold(learner: Learner, rng: random.Random) -> None:
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        want = next(
            n
            for n in range(200)
            if torch.isinf(torch.tensor(math.exp(n), dtype=torch.float64).to(dtype))
        )
        got = learner.exp_overflow_threshold(dtype)
        if got != want:
            hint = (
                "exp(n) > max  <=>  n > log(max); the smallest such integer is floor(log(max)) + 1"
            )
            if isinstance(got, int | float) and got > 1000:
                hint = "the threshold is on x, the input of exp, not on exp(x); " + hint
            fail(
                f"exp_overflow_threshold({show(dtype)}), max {torch.finfo(dtype).max:g}",
                want,
                got,
                hint,
            )


def _check_wrong_rows(learner: Learner, rng: random.Random) -> None:
    spec = ops.get("softmax")
    rows = learner.PROBE_ROWS
    wrong = set()
    for key, row in rows.items():
        x = torch.tensor([row], dtype=torch.float16)
        exp = x.exp()
        verdict = compare(
            exp / exp.sum(-1, keepdim=True),
            spec.expected({"x": x})[0],
            spec.tolerances[torch.float16],
            dtype=torch.float16,
        )
        wrong |= set() if verdict.passed else {key}
    got = learner.naive_fp16_wrong_rows()
    if not isinstance(got, str) or set(got.lower()) - set(rows):
        fail("naive_fp16_wrong_rows()", "a string of keys of PROBE_ROWS", repr(got), "e.g. 'ae'")
    if set(got.lower()) != wrong:
        missed, extra = sorted(wrong - set(got.lower())), sorted(set(got.lower()) - wrong)
        fail(
            "PROBE_ROWS in float16",
            "".join(sorted(wrong)),
            got,
            f"missed {missed}, wrongly named {extra}. For each row ask: does one exp exceed "
            "65504? does every exp underflow to 0 (then 0/0)? does the SUM exceed 65504 "
            "(then x/inf = 0)? Run naive_softmax on the row and look",
        )


CHECKS = (
    Check("naive_softmax is right on small inputs and overflows on large ones", _check_naive),
    Check("stable_softmax matches the oracle at any scale", _check_stable),
    Check("logsumexp matches float64 at any scale", _check_logsumexp),
    Check("exp_overflow_threshold of three dtypes", _check_overflow_threshold),
    Check("naive_fp16_wrong_rows", _check_wrong_rows),
)
