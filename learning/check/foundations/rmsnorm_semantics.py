"""Checks of Lesson 05 (residual RMSNorm with FP32 semantics): ``rmsnorm_semantics``

Graded as exercise ``rmsnorm_semantics``; see :mod:`learning.check.foundations`.
"""

from __future__ import annotations

import random
from typing import Any

import torch

from learning import ops
from learning.check.foundations.support import (
    HALF_DTYPES,
    Check,
    Learner,
    fail,
    random_shape,
    show,
)
from learning.check.tracing import Dispatches
from learning.correctness import compare


def _rmsnorm_inputs(rng: random.Random, shape, dtype) -> dict[str, Any]:
    inputs = ops.get("rmsnorm").inputs(shape, dtype, seed=rng.randrange(2**31))
    inputs["residual"][0] = -inputs["x"][0]  # row 0 sums to exactly zero: only eps saves it
    return inputs


def _check_rmsnorm_tolerance(learner: Learner, rng: random.Random) -> None:
    spec = ops.get("rmsnorm")
    for dtype in spec.dtypes:
        shape = rng.choice(spec.cpu_shapes)
        inputs = _rmsnorm_inputs(rng, shape, dtype)
        got = learner.residual_rmsnorm(**inputs)
        verdict = compare(got, spec.expected(inputs)[0], spec.tolerances[dtype], dtype=dtype)
        if verdict.passed:
            continue
        hint = "h = x + residual in float32; y = h * rsqrt(mean(h^2, dim=-1) + eps) * weight"
        if (
            verdict.worst_index is not None
            and verdict.worst_index[0] == 0
            and "non-finite" in verdict.reason
        ):
            hint = "row 0 has h = 0 exactly: eps belongs inside the rsqrt, rsqrt(mean(h^2) + eps)"
        fail(
            f"x, residual: {show(inputs['x'])} (row 0: residual = -x), weight near 1",
            "the float64 oracle within tolerance",
            verdict.reason,
            hint,
        )


def _check_fp32_semantics(learner: Learner, rng: random.Random) -> None:
    for dtype in HALF_DTYPES:
        inputs = _rmsnorm_inputs(rng, (64, rng.randint(500, 1500)), dtype)
        got = learner.residual_rmsnorm(**inputs)
        want = ops.rmsnorm_composition(**inputs)
        if not isinstance(got, torch.Tensor) or got.shape != want.shape or got.dtype != dtype:
            fail(f"{show(inputs['x'])}", show(want), show(got), "return x's shape and dtype")
        agree = float((got == want).double().mean())
        if agree < 0.99:
            fail(
                f"x, residual: {show(inputs['x'])}",
                "the same bits as ops.rmsnorm_composition on at least 99% of elements",
                f"{100 * agree:.1f}% agree",
                "FP32 semantics: convert x, residual and weight to float32 BEFORE adding or "
                "multiplying, and round to the input dtype once, at the end",
            )


def _traced_composition(shape, dtype) -> list[tuple[str, int]]:
    inputs = ops.get("rmsnorm").inputs(shape, dtype, seed=0)
    with Dispatches() as trace:
        ops.rmsnorm_composition(**inputs)
    return trace.calls


def _check_kernel_count(learner: Learner, rng: random.Random) -> None:
    calls = _traced_composition((4, 8), torch.float16)
    got = learner.composition_kernel_count()
    if got != len(calls):
        hint = "every operator that makes a new tensor is one kernel; casts included"
        if got == len([name for name, _ in calls if name != "_to_copy"]):
            hint = (
                "you left out the dtype conversions: .float() on x, residual, weight "
                "and the final .to()"
            )
        fail("ops.rmsnorm_composition on float16 inputs", len(calls), got, hint)


def _check_composition_bytes(learner: Learner, rng: random.Random) -> None:
    for shape in [(1823, 781), random_shape(rng, 2, 1, 400)]:
        dtype = rng.choice(HALF_DTYPES)
        want = sum(moved for _, moved in _traced_composition(shape, dtype))
        got = learner.composition_bytes(shape, dtype)
        if got != want:
            rows, cols = shape
            hint = "list each kernel with the bytes it reads and writes; intermediates are float32"
            if got == ops.get("rmsnorm").logical_bytes(shape, dtype):
                hint = (
                    "that is the fused kernel's traffic; the composition writes and re-reads "
                    "each intermediate"
                )
            elif got == want - rows * cols * (dtype.itemsize + 4):
                hint = "you left out the final cast: it reads the float32 result and writes y"
            fail(f"composition_bytes({shape}, {show(dtype)})", f"{want} (traced)", got, hint)


def _check_fused_bytes(learner: Learner, rng: random.Random) -> None:
    spec = ops.get("rmsnorm")
    for shape in [(1823, 781), *spec.cpu_shapes, random_shape(rng)]:
        dtype = rng.choice(spec.dtypes)
        want = spec.logical_bytes(shape, dtype)
        got = learner.fused_bytes(shape, dtype)
        if got != want:
            rows, cols = shape
            hint = {
                3 * rows * cols * dtype.itemsize: "the weight (N elements) is read too",
                2 * rows * cols * dtype.itemsize + cols * dtype.itemsize: "y is written too",
                (3 * rows * cols + cols)
                * 4: "the fused kernel reads and writes the storage dtype; "
                "float32 lives only in registers",
            }.get(got, "read x and residual (M x N), read weight (N), write y (M x N)")
            fail(
                f"fused_bytes({shape}, {show(dtype)})",
                f"{want} (learning.ops 'rmsnorm')",
                got,
                hint,
            )


CHECKS = (
    Check("residual_rmsnorm matches the oracle (with a zero row)", _check_rmsnorm_tolerance),
    Check("residual_rmsnorm has FP32 semantics", _check_fp32_semantics),
    Check("composition_kernel_count", _check_kernel_count),
    Check("composition_bytes matches a trace of the composition", _check_composition_bytes),
    Check("fused_bytes matches the registry", _check_fused_bytes),
)
