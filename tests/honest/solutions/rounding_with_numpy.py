"""A learner's answers to exercises/foundations/rounding.py (lesson 03)."""
# ruff: noqa: F821  (the exercise's own names)

import functools

import numpy as np
import torch


def unit_roundoff(dtype: torch.dtype) -> float:
    return 0.5 * torch.finfo(dtype).eps


def sequential_sum_fp16(x: torch.Tensor) -> torch.Tensor:
    total = functools.reduce(lambda acc, v: np.float16(acc + v), x.numpy(), np.float16(0.0))
    return torch.tensor(np.float16(total))


def sequential_sum_fp32(x: torch.Tensor) -> torch.Tensor:
    values = x.numpy().astype(np.float32)
    total = np.cumsum(values, dtype=np.float32)[-1] if len(values) else np.float32(0.0)
    return torch.tensor(np.float32(total)).half()


def pairwise_sum_fp16(x: torch.Tensor) -> torch.Tensor:
    def tree(values):
        if len(values) == 0:
            return np.float16(0.0)
        if len(values) == 1:
            return np.float16(values[0])
        half = len(values) // 2
        return np.float16(tree(values[:half]) + tree(values[half:]))

    return torch.tensor(tree(list(x.numpy())), dtype=torch.float16)


def relative_error(value: torch.Tensor, x: torch.Tensor) -> float:
    exact = x.to(torch.float64).sum().item()
    return abs(value.to(torch.float64).item() - exact) / abs(exact)


def fp16_ones_plateau() -> int:
    return 2**11


def why_max_is_exact() -> str:
    return "b"
