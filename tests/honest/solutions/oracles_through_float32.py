"""A learner's answers to exercises/foundations/oracles.py (lesson 02).

numpy_add goes through float32 for every dtype (two 16-bit values' sum rounds the same
through float32); the tolerance test counts the elements outside their bound.
"""
# ruff: noqa: F821  (the exercise's own names)

import torch


def numpy_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    total = x.to(torch.float32).numpy() + y.to(torch.float32).numpy()
    return torch.from_numpy(total).to(x.dtype)


def add_oracle(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x.to(torch.float64) + y.to(torch.float64)


def add_tolerance(dtype: torch.dtype) -> Tolerance:
    spec = ops.get("add")
    return spec.tolerances[dtype]


def within_tolerance(actual: torch.Tensor, expected: torch.Tensor, tolerance: Tolerance) -> bool:
    got, ref = actual.to(torch.float64), expected.to(torch.float64)
    if got.numel() and not torch.isfinite(got).all():
        return False
    largest = ref.abs().max().item() if ref.numel() else 0.0
    scale = largest or 1.0
    outside = (got - ref).abs() > tolerance.atol * scale + tolerance.rtol * ref.abs()
    return int(outside.sum()) == 0


def all_zeros_tolerance_used(dtype: torch.dtype) -> float:
    tolerance = add_tolerance(dtype)
    largest = 1.0  # any non-zero |ref|: the error there is |ref|, the bound (atol + rtol) |ref|
    return largest / (tolerance.atol * largest + tolerance.rtol * largest)
