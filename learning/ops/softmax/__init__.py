"""Softmax over the last dimension.

Read each row once and write it once; the row max is subtracted before ``exp`` so that no
input can overflow (lesson 04).
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
    itemsize,
    no_flops,
    row_inputs,
)


def oracle(x):
    shifted = x - x.amax(dim=-1, keepdim=True)
    exp = shifted.exp()
    return exp / exp.sum(dim=-1, keepdim=True)


BASELINES = MappingProxyType({"torch": lambda x: torch.softmax(x, dim=-1)})


def logical_bytes(shape, dtype):  # read M*N, write M*N
    return 2 * math.prod(shape) * itemsize(dtype)


SPEC = OpSpec(
    name="softmax", shape_names=ROWS, default_shapes=ROW_SHAPES, cpu_shapes=ROW_CPU_SHAPES,
    module="kernels.softmax", function="softmax", make_inputs=row_inputs, oracle=oracle,
    baselines=BASELINES, logical_bytes=logical_bytes, flops=no_flops,
    tolerances=FORWARD_TOLERANCES, exercise="softmax",
)
