"""Checks of Lesson 01 (tensors, memory and logical bytes): ``bytes_and_layout``

Graded as exercise ``tensors``; see :mod:`learning.check.foundations`.
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
    random_shape,
    show,
)


def _check_element_size(learner: Learner, rng: random.Random) -> None:
    dtypes = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.int64]
    for dtype in rng.sample(dtypes, len(dtypes)):
        want = torch.empty((), dtype=dtype).element_size()
        got = learner.element_size(dtype)
        if got != want:
            hint = (
                "that is bits; a byte is 8 bits"
                if got == 8 * want
                else (
                    "bfloat16 is 2 bytes, like float16: same size, different split of the bits"
                    if dtype == torch.bfloat16
                    else "dtype.itemsize is the size of one element in bytes"
                )
            )
            fail(f"element_size({show(dtype)})", want, got, hint)


def _check_contiguous_strides(learner: Learner, rng: random.Random) -> None:
    shapes = [(2, 3, 4)] + [random_shape(rng, rng.randint(1, 4), 1, 9) for _ in range(8)]
    for shape in shapes:
        want = torch.empty(shape).stride()
        got = learner.contiguous_strides(shape)
        if tuple(got) != want:
            hint = (
                "those are the right numbers in the wrong order: the LAST dimension has stride 1"
                if tuple(reversed(tuple(got))) == want
                else "stride[i] is the product of the sizes of all dimensions after i"
            )
            fail(f"contiguous_strides({shape})", want, tuple(got), hint)


def _random_view(rng: random.Random) -> torch.Tensor:
    base = torch.empty(random_shape(rng, 3, 1, 6))
    steps = [
        lambda t: t.transpose(0, 1),
        lambda t: t.transpose(1, 2),
        lambda t: t[:, :, ::2],
        lambda t: t[:, : max(1, t.shape[1] - 1)],
        lambda t: t[: max(1, t.shape[0] - 1)],
        lambda t: t[:, :1],
        lambda t: t.unsqueeze(1),
        lambda t: t.expand(2, *t.shape),
    ]
    view = base
    for step in rng.sample(steps, rng.randint(1, 3)):
        view = step(view)
    return view


def _check_is_contiguous(learner: Learner, rng: random.Random) -> None:
    matrix = torch.empty(1823, 781)
    worked = [
        ("a fresh 1823x781 tensor", matrix),
        ("its transpose .t()", matrix.t()),
        ("every other column [:, ::2]", matrix[:, ::2]),
        ("the first 100 rows [:100]", matrix[:100]),
        ("one column as a 1823x1 view [:, :1]", matrix[:, :1]),
        ("one row as a 1x781 view [5:6]", matrix[5:6]),
        ("a 781x1 column transposed to 1x781", torch.empty(781, 1).t()),
    ]
    views = worked + [("a random view", _random_view(rng)) for _ in range(12)]
    for label, view in views:
        want = view.is_contiguous()
        shape, strides = tuple(view.shape), view.stride()
        got = learner.is_contiguous(shape, strides)
        if bool(got) != want:
            size_one = any(s == 1 for s in shape)
            hint = (
                "a dimension of size 1 is never stepped over, so its stride does not matter"
                if size_one and want
                else "compare each stride with contiguous_strides(shape); "
                "a transpose or a step slice breaks the row-after-row packing"
            )
            fail(f"{label}: shape {shape}, strides {strides}", want, got, hint)


def _check_tensor_bytes(learner: Learner, rng: random.Random) -> None:
    cases = [((1823, 781), torch.float16)] + [
        (random_shape(rng, rng.randint(1, 3), 1, 500), rng.choice(list(ops.DTYPES.values())))
        for _ in range(6)
    ]
    for shape, dtype in cases:
        want = torch.empty(shape, dtype=dtype).nbytes
        got = learner.tensor_bytes(shape, dtype)
        if got != want:
            hint = (
                "you counted elements; multiply by the element size"
                if got == math.prod(shape)
                else "number of elements (math.prod(shape)) times element_size(dtype)"
            )
            fail(f"tensor_bytes({shape}, {show(dtype)})", want, got, hint)


def _check_registry_bytes(function: str, op: str, learner: Learner, rng: random.Random) -> None:
    spec = ops.get(op)
    shapes = [(1823, 781), *spec.cpu_shapes, random_shape(rng), random_shape(rng)]
    for shape in shapes:
        dtype = rng.choice(spec.dtypes)
        want = spec.logical_bytes(shape, dtype)
        got = getattr(learner, function)(shape, dtype)
        if got == want:
            continue
        elements, size = math.prod(shape), dtype.itemsize
        if op == "add":
            hint = {
                2 * elements * size: "you counted the two inputs; the output is written too",
                3 * elements: "those are elements; multiply by the element size",
                3 * elements * 4: "float16 and bfloat16 elements are 2 bytes, not 4",
            }.get(got, "read x, read y, write out: three tensors of the same shape")
        else:
            hint = {
                elements * size: "you counted the input; the M row sums are written too",
                2 * elements * size: "the output is one value per row (M values), not M x N",
                elements + shape[0]: "those are elements; multiply by the element size",
            }.get(got, "read M*N elements, write M elements, all in the input's dtype")
        fail(f"{function}({shape}, {show(dtype)})", f"{want} (learning.ops '{op}')", got, hint)


def _bytes_check(function: str, op: str):
    return lambda learner, rng: _check_registry_bytes(function, op, learner, rng)


CHECKS = (
    Check("element_size of six dtypes", _check_element_size),
    Check("contiguous_strides matches a fresh tensor", _check_contiguous_strides),
    Check("is_contiguous on transposes, slices and random views", _check_is_contiguous),
    Check("tensor_bytes is numel times element size", _check_tensor_bytes),
    Check("add_bytes matches the registry", _bytes_check("add_bytes", "add")),
    Check("row_sum_bytes matches the registry", _bytes_check("row_sum_bytes", "sum")),
)
