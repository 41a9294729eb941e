# Your copy of reference/foundations/bytes_and_layout.py,
# made by scripts/make_exercises.py with the solution regions replaced by TODOs.
# This file is yours to edit; `python -m learning.check <exercise>` grades it.
# (Maintainers: edit the reference and rerun the script, never this copy.)
"""Lesson 01: tensors, memory and logical bytes.

A tensor is a pointer into a flat block of memory (its *storage*) plus a shape and *strides*:
element ``[i, j]`` of a 2-D tensor sits ``i * stride[0] + j * stride[1]`` elements after the
first one. Transposing or slicing changes the strides, never the storage, so a view can be
*non-contiguous*: its elements are not packed row after row.

A kernel's *logical bytes* are what its definition must move: every input element read once,
every output element written once. The benchmark divides them by the time to get GB/s, so a
wrong element size or a forgotten output makes every bandwidth figure wrong. The op registry
(``learning.ops``) holds each op's formula; the checker compares yours with it.
"""

from __future__ import annotations

import math

import torch


def element_size(dtype: torch.dtype) -> int:
    """Bytes one element of ``dtype`` occupies: 2 for float16 and bfloat16, 4 for float32...

    >>> element_size(torch.bfloat16)
    2
    """
    # TODO: a dtype knows its own size; look at torch.dtype.itemsize (or torch.finfo(dtype).bits)
    raise NotImplementedError(
        "exercises/foundations/bytes_and_layout.py:element_size: a dtype knows its own size; look "
        "at torch.dtype.itemsize (or torch.finfo(dtype).bits)"
    )


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The strides, in elements, of a freshly allocated (row-major, contiguous) tensor.

    The last dimension has stride 1; each earlier one steps over a whole row of the dimensions
    after it. ``(2, 3, 4)`` -> ``(12, 4, 1)``.
    """
    # TODO: walk the shape from the last dimension to the first, multiplying as you go
    raise NotImplementedError(
        "exercises/foundations/bytes_and_layout.py:contiguous_strides: walk the shape from the last"
        " dimension to the first, multiplying as you go"
    )


def is_contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether a view with this shape and these strides is packed row after row.

    It is when every dimension's stride equals :func:`contiguous_strides` of the shape, except
    that a dimension of size 1 may have any stride (it is never stepped over). A view with no
    elements (a zero in the shape) is contiguous, as PyTorch says.
    """
    # TODO: compare with contiguous_strides(shape), skipping dimensions of size 1
    raise NotImplementedError(
        "exercises/foundations/bytes_and_layout.py:is_contiguous: compare with "
        "contiguous_strides(shape), skipping dimensions of size 1"
    )


def tensor_bytes(shape: tuple[int, ...], dtype: torch.dtype) -> int:
    """Logical bytes of one tensor: its number of elements times the element size."""
    # TODO: number of elements (math.prod) times element_size(dtype)
    raise NotImplementedError(
        "exercises/foundations/bytes_and_layout.py:tensor_bytes: number of elements (math.prod) "
        "times element_size(dtype)"
    )


def add_bytes(shape: tuple[int, ...], dtype: torch.dtype) -> int:
    """Logical bytes of ``out = x + y`` for inputs of ``shape``: what is read and written."""
    # TODO: two tensors are read and one is written; count all three
    raise NotImplementedError(
        "exercises/foundations/bytes_and_layout.py:add_bytes: two tensors are read and one is "
        "written; count all three"
    )


def row_sum_bytes(shape: tuple[int, int], dtype: torch.dtype) -> int:
    """Logical bytes of ``x.sum(dim=-1)`` for ``x`` of shape ``(M, N)``: read M*N, write M."""
    # TODO: the input is M x N; the output is one value per row, in the same dtype
    raise NotImplementedError(
        "exercises/foundations/bytes_and_layout.py:row_sum_bytes: the input is M x N; the output is"
        " one value per row, in the same dtype"
    )
