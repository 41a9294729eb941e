"""A learner's answers to exercises/foundations/bytes_and_layout.py (lesson 01), asking PyTorch.

The strides come from an empty tensor of the shape, contiguity from a strided view of one.
"""
# ruff: noqa: F821  (the exercise's own names)

import torch


def element_size(dtype: torch.dtype) -> int:
    return dtype.itemsize


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(torch.empty(shape, device="meta").stride())


def is_contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    return torch.empty((0,), device="meta").as_strided(shape, strides).is_contiguous()


def tensor_bytes(shape: tuple[int, ...], dtype: torch.dtype) -> int:
    return math.prod(shape) * dtype.itemsize


def add_bytes(shape: tuple[int, ...], dtype: torch.dtype) -> int:
    return sum(tensor_bytes(shape, dtype) for _tensor in ("x", "y", "out"))


def row_sum_bytes(shape: tuple[int, int], dtype: torch.dtype) -> int:
    return tensor_bytes(shape, dtype) + tensor_bytes(shape[:1], dtype)
