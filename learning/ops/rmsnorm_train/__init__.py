"""Residual RMSNorm forward + backward (dx = dresidual, dweight).

The forward op's kernels, oracle and baselines, timed as a forward and a backward pass.
"""

from __future__ import annotations

from learning.ops import rmsnorm as forward
from learning.ops.spec import (
    GRADIENT_TOLERANCES,
    ROW_CPU_SHAPES,
    ROWS,
    TRAIN_ROW_SHAPES,
    OpSpec,
    itemsize,
    no_flops,
)


def logical_bytes(shape, dtype):
    # fwd: read x, residual, write y; bwd: read x, residual (recompute h), dy, write dx
    # weight-sized: read w (fwd), read w (bwd), write dw
    rows, cols = shape
    return (7 * rows * cols + 3 * cols) * itemsize(dtype)


SPEC = OpSpec(
    name="rmsnorm_train", shape_names=ROWS, default_shapes=TRAIN_ROW_SHAPES,
    cpu_shapes=ROW_CPU_SHAPES, module="kernels.rmsnorm", function="rmsnorm",
    make_inputs=forward.make_inputs, oracle=forward.oracle, baselines=forward.BASELINES,
    logical_bytes=logical_bytes, flops=no_flops, tolerances=GRADIENT_TOLERANCES,
    exercise="rmsnorm_train", wrt=("x", "residual", "weight"),
)
