"""C = A @ B (A is MxK, B is KxN).

Lesson 12's op: 2·M·N·K FLOPs over a few bytes a FLOP, so its time is the tensor cores'.
"""

from __future__ import annotations

import math
from types import MappingProxyType

import torch

from learning.ops.spec import (
    FORWARD_TOLERANCES,
    GEMM,
    GEMM_CPU_SHAPES,
    OpSpec,
    generator,
    itemsize,
    randn,
)

SHAPES = (
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (16384, 1024, 1024),  # tall and skinny: few output tiles per row of A
    (3000, 1999, 1023),  # irregular: every dimension needs a mask
)


def make_inputs(shape, dtype, seed, device):
    source = generator(seed, device)
    m, n, k = shape
    # B is scaled by 1/sqrt(K) so outputs stay near unit size at every K (fp16 range is small).
    a = randn((m, k), dtype, source, device)
    b = (torch.randn((k, n), generator=source, device=device) / math.sqrt(k)).to(dtype)
    return {"a": a, "b": b}


def oracle(a, b):
    return a @ b


BASELINES = MappingProxyType({"torch": lambda a, b: torch.mm(a, b)})


def logical_bytes(shape, dtype):  # read A and B once, write C once
    m, n, k = shape
    return (m * k + k * n + m * n) * itemsize(dtype)


def flops(shape):
    m, n, k = shape
    return 2 * m * n * k


SPEC = OpSpec(
    name="matmul", shape_names=GEMM, default_shapes=SHAPES, cpu_shapes=GEMM_CPU_SHAPES,
    module="kernels.matmul", function="matmul", make_inputs=make_inputs, oracle=oracle,
    baselines=BASELINES, logical_bytes=logical_bytes, flops=flops,
    tolerances=FORWARD_TOLERANCES, exercise="matmul",
)
