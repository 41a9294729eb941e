"""Checks of Lesson 03 (reductions and floating-point error): ``rounding``

Graded as exercise ``rounding``; see :mod:`learning.check.foundations`.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch

from learning import ops
from learning.check.foundations.support import (
    Check,
    Learner,
    choice,
    close,
    fail,
    show,
)


def _sequential(values: np.ndarray, accumulator: type) -> float:
    total = accumulator(0.0)
    for value in values:
        total = accumulator(total + accumulator(value))
    return float(total)


def _tree_fp16(values: np.ndarray) -> float:
    if len(values) == 0:
        return 0.0
    if len(values) == 1:
        return float(values[0])
    middle = len(values) // 2
    return float(
        np.float16(
            np.float16(_tree_fp16(values[:middle])) + np.float16(_tree_fp16(values[middle:]))
        )
    )


def _scalar(got: Any, label: str) -> float:
    if not isinstance(got, torch.Tensor) or got.dtype != torch.float16 or got.numel() != 1:
        fail(
            label,
            "a 0-d float16 tensor",
            show(got),
            "return torch.tensor(value, dtype=torch.float16)",
        )
    return float(got)


def _check_unit_roundoff(learner: Learner, rng: random.Random) -> None:
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        want = torch.finfo(dtype).eps / 2
        got = learner.unit_roundoff(dtype)
        if not close(got, want, 1e-12):
            hint = (
                "eps is the gap between 1 and the next number; "
                "rounding to nearest errs by half of it"
                if close(got, 2 * want, 1e-12)
                else "torch.finfo(dtype).eps / 2: 2^-11 for float16, 2^-8 for bfloat16"
            )
            fail(f"unit_roundoff({show(dtype)})", want, got, hint)


def _uniform_fp16(rng: random.Random, count: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(rng.randrange(2**31))
    return torch.rand(count, generator=generator).half()


def _check_sequential_fp16(learner: Learner, rng: random.Random) -> None:
    cases = [("10 000 ones", torch.ones(10_000, dtype=torch.float16))] + [
        (f"{n} uniform [0, 1) values in float16", _uniform_fp16(rng, n))
        for n in (rng.randint(1000, 3000), rng.randint(2, 50))
    ]
    for label, x in cases:
        values = x.numpy()
        want = _sequential(values, np.float16)
        got = _scalar(learner.sequential_sum_fp16(x), label)
        if got != want:
            hint = "round the running sum to float16 after every addition, from left to right"
            if got == float(np.float16(_sequential(values, np.float32))):
                hint = "you accumulated in float32 (torch.sum does): " + hint
            elif got == _tree_fp16(values):
                hint = "that is the pairwise tree; " + hint
            fail(label, want, got, hint)


def _check_sequential_fp32(learner: Learner, rng: random.Random) -> None:
    generator = torch.Generator().manual_seed(rng.randrange(2**31))
    # Multiples of 1/16 below 8: every partial sum is exact in float32, whatever the order.
    sixteenths = (
        torch.randint(0, 128, (rng.randint(2000, 4000),), generator=generator) / 16
    ).half()
    cases = [
        ("2048 followed by sixteen 1.0s", torch.tensor([2048.0] + [1.0] * 16, dtype=torch.float16)),
        (f"{len(sixteenths)} multiples of 1/16 in [0, 8)", sixteenths),
    ]
    for label, x in cases:
        want = float(x.double().sum().half())
        got = _scalar(learner.sequential_sum_fp32(x), label)
        if got != want:
            hint = "a float32 accumulator, and one rounding to float16 at the very end"
            if got == _sequential(x.numpy(), np.float16):
                hint = "that is the float16 accumulator's answer; " + hint
            fail(label, want, got, hint)


def _check_pairwise(learner: Learner, rng: random.Random) -> None:
    cases = [
        ("2048 followed by sixteen 1.0s", torch.tensor([2048.0] + [1.0] * 16, dtype=torch.float16))
    ]
    cases += [
        (f"{n} uniform [0, 1) values", _uniform_fp16(rng, n))
        for n in (rng.randint(1000, 3000), 7, 1)
    ]
    for label, x in cases:
        values = x.numpy()
        want = _tree_fp16(values)
        got = _scalar(learner.pairwise_sum_fp16(x), label)
        if got != want:
            hint = "split at len(x) // 2, sum both halves the same way, add them in float16"
            if got == _sequential(values, np.float16):
                hint = "that is the sequential order; " + hint
            elif got == float(x.double().sum().half()):
                hint = (
                    "round every partial sum to float16 (the point is a tree of float16 adds); "
                    + hint
                )
            fail(label, want, got, hint)


def _check_relative_error(learner: Learner, rng: random.Random) -> None:
    x = _uniform_fp16(rng, rng.randint(500, 2000))
    value = x.sum().half() + rng.choice([-1, 1]) * rng.randint(1, 8)
    exact = float(x.double().sum())
    want = abs(float(value) - exact) / exact
    got = learner.relative_error(value, x)
    if not close(got, want, 1e-9):
        fail(
            f"value {float(value)}, x: {len(x)} uniform [0, 1) float16 values",
            want,
            got,
            "|value - exact| / |exact| with exact = x.double().sum(), computed in float64",
        )


def _check_plateau(learner: Learner, rng: random.Random) -> None:
    want = int(_sequential(np.ones(10_000, dtype=np.float16), np.float16))
    got = learner.fp16_ones_plateau()
    if got != want:
        fail(
            "fp16_ones_plateau()",
            want,
            got,
            "float16 has 11 significant bits: above 2048 the numbers are 2 apart, "
            "2048 + 1 sits exactly halfway, and a tie rounds to the even neighbour (2048)",
        )


def _check_max_is_exact(learner: Learner, rng: random.Random) -> None:
    x = ops.get("max").inputs((37, 781), torch.float16, seed=rng.randrange(2**31))["x"]
    assert torch.equal(x.amax(dim=-1).double(), x.double().amax(dim=-1))  # what the answer claims
    choice(
        learner,
        "why_max_is_exact",
        learner.MAX_IS_EXACT_CHOICES,
        "b",
        "run x.amax(-1) against x.double().amax(-1): every result is one of the inputs",
    )


CHECKS = (
    Check("unit_roundoff of three dtypes", _check_unit_roundoff),
    Check("sequential_sum_fp16 rounds after every add", _check_sequential_fp16),
    Check("sequential_sum_fp32 rounds once", _check_sequential_fp32),
    Check("pairwise_sum_fp16 follows the tree", _check_pairwise),
    Check("relative_error against the float64 sum", _check_relative_error),
    Check("fp16_ones_plateau", _check_plateau),
    Check("why_max_is_exact", _check_max_is_exact),
)
