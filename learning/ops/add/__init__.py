"""Elementwise x + y.

Lesson 02's op: one read of each input and one write, no arithmetic to speak of, so its time
is the streaming ceiling that every other row op is measured against.
"""

from __future__ import annotations

import math
from types import MappingProxyType

import torch

from learning.ops.spec import (
    FORWARD_TOLERANCES,
    ROW_CPU_SHAPES,
    ROW_SHAPES,
    ROWS,
    OpSpec,
    elementwise_flops,
    generator,
    itemsize,
    randn,
)


def make_inputs(shape, dtype, seed, device):
    source = generator(seed, device)
    x = randn(shape, dtype, source, device)
    return {"x": x, "y": randn(shape, dtype, source, device)}


def oracle(x, y):
    return x + y


def logical_bytes(shape, dtype):  # read x, read y, write out
    return 3 * math.prod(shape) * itemsize(dtype)


SPEC = OpSpec(
    name="add", shape_names=ROWS, default_shapes=ROW_SHAPES, cpu_shapes=ROW_CPU_SHAPES,
    module="kernels.add", function="add", make_inputs=make_inputs, oracle=oracle,
    baselines=MappingProxyType({"torch": lambda x, y: torch.add(x, y)}),
    logical_bytes=logical_bytes, flops=elementwise_flops, tolerances=FORWARD_TOLERANCES,
    exercise="add",
)
