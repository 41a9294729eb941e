"""A learner's answers to exercises/foundations/bytes_and_layout.py (lesson 01), in loops.

Only these functions are the learner's; the rest of the file is the exercise as given.
"""
# ruff: noqa: F821  (the exercise's own names)

import torch


def element_size(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides = [1] * len(shape)
    for dim in range(len(shape) - 2, -1, -1):
        strides[dim] = strides[dim + 1] * shape[dim + 1]
    return tuple(strides)


def is_contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    if 0 in shape:
        return True
    for size, stride, packed in zip(shape, strides, contiguous_strides(shape), strict=True):
        if size != 1 and stride != packed:
            return False
    return True


def tensor_bytes(shape: tuple[int, ...], dtype: torch.dtype) -> int:
    count = 1
    for size in shape:
        count *= size
    return count * element_size(dtype)


def add_bytes(shape: tuple[int, ...], dtype: torch.dtype) -> int:
    read = 2 * tensor_bytes(shape, dtype)
    written = tensor_bytes(shape, dtype)
    return read + written


def row_sum_bytes(shape: tuple[int, int], dtype: torch.dtype) -> int:
    rows, cols = shape
    return (rows * cols + rows) * element_size(dtype)
