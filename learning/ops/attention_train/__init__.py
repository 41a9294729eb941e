"""Attention forward + backward (dq, dk, dv from dO), every key visible.

The forward op's kernels, oracle and baselines; one call is a forward and a backward pass
through autograd, and what is compared with the oracle is the three gradients.

Bytes: the forward reads q, k, v and writes o and the log-sum-exp of each query row (fp32);
the backward reads q, k, v, o, dO and that log-sum-exp and writes dq, dk, dv. A kernel that
keeps more between the passes (FlashAttention-2's ``D_i = rowsum(dO * O)``) moves more than
this; one that writes the N x N probabilities moves far more.

FLOPs: a training step is counted as 2.5x the forward, the factor the course's attention
figures use. It is not a count of products: the backward needs four of the forward's size
(dv = P^T dO, dP = dO v^T, dq = dS k, dk = dS^T q), five with the recomputation of q k^T that
FlashAttention's backward makes, which is how its papers count a step, 3.5x. A ratio of two
kernels timed side by side does not depend on the factor; a TFLOP/s figure compared with a
published one does.
"""

from __future__ import annotations

import math

from learning.ops import attention as forward
from learning.ops.spec import GRADIENT_TOLERANCES, OpSpec, itemsize

TRAINING_FACTOR = 2.5  # a training step's FLOPs over the forward's


def logical_bytes(shape, dtype):
    # fwd: read q, k, v, write o and the log-sum-exp; bwd: read q, k, v, o, dO and the
    # log-sum-exp, write dq, dk, dv
    batch, heads, n, _ = shape
    return 12 * math.prod(shape) * itemsize(dtype) + 2 * batch * heads * n * 4


def flops(shape):
    return int(TRAINING_FACTOR * forward.flops(shape))


SPEC = OpSpec(
    name="attention_train", shape_names=forward.HEADS, default_shapes=forward.SHAPES,
    cpu_shapes=forward.CPU_SHAPES, module="kernels.attention", function="attention",
    make_inputs=forward.make_inputs, oracle=forward.oracle, baselines=forward.BASELINES,
    logical_bytes=logical_bytes, flops=flops, tolerances=GRADIENT_TOLERANCES,
    exercise="attention_train", wrt=("q", "k", "v"), dtypes=forward.DTYPES,
)
