"""Softmax forward + backward (dx from y and dy).

The forward op's kernels, oracle and baselines; one call is a forward and a backward pass
through autograd, and what is compared with the oracle is the gradient.
"""

from __future__ import annotations

import math

from learning.ops import softmax as forward
from learning.ops.spec import (
    GRADIENT_TOLERANCES,
    ROW_CPU_SHAPES,
    ROWS,
    TRAIN_ROW_SHAPES,
    OpSpec,
    itemsize,
    no_flops,
    row_inputs,
)


def logical_bytes(shape, dtype):  # fwd: read x, write y; bwd: read y, read dy, write dx
    return 5 * math.prod(shape) * itemsize(dtype)


SPEC = OpSpec(
    name="softmax_train", shape_names=ROWS, default_shapes=TRAIN_ROW_SHAPES,
    cpu_shapes=ROW_CPU_SHAPES, module="kernels.softmax", function="softmax",
    make_inputs=row_inputs, oracle=forward.oracle, baselines=forward.BASELINES,
    logical_bytes=logical_bytes, flops=no_flops, tolerances=GRADIENT_TOLERANCES,
    exercise="softmax_train", wrt=("x",),
)
