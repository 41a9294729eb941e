"""Causal attention forward + backward (dq, dk, dv from dO): query i sees keys 0..i.

``attention_train`` with ``causal=True`` among its inputs, and half its FLOPs (the masked
half of every product is not work). The bytes are the same: every element of q, k, v, o and
the gradients is still read or written once.
"""

from __future__ import annotations

import functools

from learning.ops import attention as forward
from learning.ops import attention_train as unmasked
from learning.ops.spec import GRADIENT_TOLERANCES, OpSpec


def flops(shape):
    return unmasked.flops(shape) // 2


SPEC = OpSpec(
    name="attention_causal_train", shape_names=forward.HEADS, default_shapes=forward.SHAPES,
    cpu_shapes=forward.CPU_SHAPES, module="kernels.attention", function="attention",
    make_inputs=functools.partial(forward.make_inputs, causal=True), oracle=forward.oracle,
    baselines=forward.BASELINES, logical_bytes=unmasked.logical_bytes, flops=flops,
    tolerances=GRADIENT_TOLERANCES, exercise="attention_train", wrt=("q", "k", "v"),
    dtypes=forward.DTYPES,
)
