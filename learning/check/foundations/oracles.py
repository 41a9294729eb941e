"""Checks of Lesson 02 (elementwise add and float64 oracles): ``oracles``

Graded as exercise ``oracles``; see :mod:`learning.check.foundations`.
"""

from __future__ import annotations

import random

import torch

from learning import ops
from learning.check.foundations.support import (
    Check,
    Learner,
    close,
    fail,
    random_shape,
    show,
)
from learning.correctness import compare


def _random_pair(rng: random.Random, shape, dtype) -> dict[str, torch.Tensor]:
    return ops.get("add").inputs(shape, dtype, seed=rng.randrange(2**31))


def _check_numpy_add(learner: Learner, rng: random.Random) -> None:
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        shape = rng.choice([(37, 781), random_shape(rng, 2, 1, 300)])
        pair = _random_pair(rng, shape, dtype)
        got = learner.numpy_add(pair["x"], pair["y"])
        label = f"x, y: {show(pair['x'])} each, random normal"
        if not isinstance(got, torch.Tensor):
            fail(
                label, "a torch.Tensor", type(got).__name__, "wrap the array with torch.from_numpy"
            )
        if got.dtype != dtype or tuple(got.shape) != shape:
            fail(label, show(pair["x"]), show(got), "return the inputs' shape and dtype")
        want = pair["x"] + pair["y"]
        if not torch.equal(got, want):
            where = int((got != want).flatten().nonzero()[0])
            fail(
                label,
                f"{float(want.flatten()[where])} at flat index {where} (same bits as torch)",
                float(got.flatten()[where]),
                "both libraries round the exact sum once, so every bit must agree; "
                "for bfloat16 add in float32 and round once at the end",
            )


def _check_add_oracle(learner: Learner, rng: random.Random) -> None:
    for dtype in (torch.float16, torch.bfloat16):
        pair = _random_pair(rng, (37, 781), dtype)
        got = learner.add_oracle(pair["x"], pair["y"])
        label = f"x, y: {show(pair['x'])} each"
        if not isinstance(got, torch.Tensor) or got.dtype != torch.float64:
            fail(label, "a float64 tensor", show(got), "the oracle works in float64")
        want = pair["x"].double() + pair["y"].double()
        if not torch.equal(got, want):
            hint = (
                "you added in the input's dtype and converted afterwards: that oracle has the "
                "kernel's own rounding, so it cannot see it; convert each input first"
                if torch.equal(got, (pair["x"] + pair["y"]).double())
                else "x.double() + y.double(): the exact sum of the rounded inputs"
            )
            fail(label, "x.double() + y.double() exactly", "different values", hint)


def _check_add_tolerance(learner: Learner, rng: random.Random) -> None:
    spec = ops.get("add")
    for dtype in rng.sample(list(spec.dtypes), len(spec.dtypes)):
        got = learner.add_tolerance(dtype)
        if got != spec.tolerances[dtype]:
            fail(
                f"add_tolerance({show(dtype)})",
                spec.tolerances[dtype],
                got,
                "read it from the registry: ops.get('add').tolerances[dtype]; never copy numbers",
            )


def _check_within_tolerance(learner: Learner, rng: random.Random) -> None:
    spec = ops.get("add")
    dtype = rng.choice(spec.dtypes)
    tolerance = spec.tolerances[dtype]
    pair = _random_pair(rng, (37, 781), dtype)
    expected = spec.expected(pair)[0]
    tiny = expected * 1e-4  # data that happens to be small: a plain absolute atol misses zeros
    bound = tolerance.atol * expected.abs().max() + tolerance.rtol * expected.abs()
    signs = torch.where(torch.rand(expected.shape) < 0.5, -1.0, 1.0).double()
    nan_output = (pair["x"] + pair["y"]).clone()
    nan_output.view(-1)[rng.randrange(nan_output.numel())] = float("nan")
    cases = [
        (
            "the correct output x + y",
            (pair["x"] + pair["y"]).double(),
            expected,
            "a correct output must pass",
        ),
        (
            "an all-zeros output",
            torch.zeros_like(expected),
            expected,
            "zeros miss every element by |ref|; the bound must scale with max|expected|",
        ),
        (
            "an all-zeros output, data scaled by 1e-4",
            torch.zeros_like(tiny),
            tiny,
            "multiply atol by max|expected|: a fixed atol lets zeros pass on small data",
        ),
        (
            "the input echoed back (x)",
            pair["x"].double(),
            expected,
            "the input echo is far from x + y; check the bound",
        ),
        (
            "expected + 0.9 * bound",
            expected + 0.9 * signs * bound,
            expected,
            "an output inside the bound must pass: atol*max|expected| + rtol*|expected|",
        ),
        (
            "expected + 1.1 * bound",
            expected + 1.1 * signs * bound,
            expected,
            "an output outside the bound must fail: atol*max|expected| + rtol*|expected|",
        ),
        (
            "x + y with one NaN",
            nan_output.double(),
            expected,
            "every comparison with NaN is False: test err <= bound (or isfinite), "
            "not 'not (err > bound)'",
        ),
    ]
    for label, actual, reference, hint in cases:
        want = compare(actual, reference, tolerance, dtype=actual.dtype).passed
        got = learner.within_tolerance(actual, reference, tolerance)
        if bool(got) != want:
            fail(f"{label}; {tolerance}", want, got, hint)


def _check_all_zeros_tolerance_used(learner: Learner, rng: random.Random) -> None:
    spec = ops.get("add")
    for dtype in spec.dtypes:
        pair = _random_pair(rng, random_shape(rng, 2, 2, 200), dtype)
        expected = spec.expected(pair)[0]
        want = compare(
            torch.zeros_like(expected), expected, spec.tolerances[dtype], dtype=torch.float64
        ).tolerance_used
        got = learner.all_zeros_tolerance_used(dtype)
        if not close(got, want, 1e-6):
            atol, rtol = spec.tolerances[dtype].atol, spec.tolerances[dtype].rtol
            hint = (
                "at the worst element the bound also has rtol*|ref|, and there |ref| = max|ref|"
                if close(got, 1 / atol, 1e-6)
                else f"at the largest |ref| = s: error s, bound atol*s + rtol*s "
                f"(atol={atol}, rtol={rtol})"
            )
            fail(f"all_zeros_tolerance_used({show(dtype)})", want, got, hint)


CHECKS = (
    Check("numpy_add gives torch's bits in every dtype", _check_numpy_add),
    Check("add_oracle adds in float64", _check_add_oracle),
    Check("add_tolerance reads the registry", _check_add_tolerance),
    Check("within_tolerance agrees with learning.correctness", _check_within_tolerance),
    Check("all_zeros_tolerance_used", _check_all_zeros_tolerance_used),
)
