"""GEMM forward + backward (dA = dC B^T, dB = A^T dC).

Three GEMMs of the forward's size: the forward op's kernels, oracle and baselines.
"""

from __future__ import annotations

from learning.ops import matmul as forward
from learning.ops.spec import GEMM, GEMM_CPU_SHAPES, GRADIENT_TOLERANCES, OpSpec

SHAPES = (
    (4096, 4096, 4096),
    (16384, 1024, 1024),
    (3000, 1999, 1023),
)


def logical_bytes(shape, dtype):  # three GEMMs, each moving the forward's matrices
    return 3 * forward.logical_bytes(shape, dtype)


def flops(shape):
    m, n, k = shape
    return 6 * m * n * k


SPEC = OpSpec(
    name="matmul_train", shape_names=GEMM, default_shapes=SHAPES, cpu_shapes=GEMM_CPU_SHAPES,
    module="kernels.matmul", function="matmul", make_inputs=forward.make_inputs,
    oracle=forward.oracle, baselines=forward.BASELINES, logical_bytes=logical_bytes,
    flops=flops, tolerances=GRADIENT_TOLERANCES, exercise="matmul_train", wrt=("a", "b"),
)
