"""Causal attention: query i sees keys 0..i (softmax(q k^T / sqrt(D) + mask) v).

``attention`` with ``causal=True`` among its inputs (why the mask is an op and not a shape:
``learning.ops.attention``'s docstring). Half the score matrix is masked, so half the FLOPs are
counted: a kernel that computes the masked tiles and throws them away does the work of the
non-causal op and is measured as doing half of it.
"""

from __future__ import annotations

import functools

from learning.ops import attention as unmasked
from learning.ops.spec import FORWARD_TOLERANCES, OpSpec


def flops(shape):  # half of the scores: the triangle on and below the diagonal
    return unmasked.flops(shape) // 2


SPEC = OpSpec(
    name="attention_causal", shape_names=unmasked.HEADS, default_shapes=unmasked.SHAPES,
    cpu_shapes=unmasked.CPU_SHAPES, module="kernels.attention", function="attention",
    make_inputs=functools.partial(unmasked.make_inputs, causal=True), oracle=unmasked.oracle,
    baselines=unmasked.BASELINES, logical_bytes=unmasked.logical_bytes, flops=flops,
    tolerances=FORWARD_TOLERANCES, exercise="attention", dtypes=unmasked.DTYPES,
)
