"""Maximum over the last dimension.

The row sum's twin: the same reads, a comparison instead of an addition, and no rounding.
"""

from __future__ import annotations

from types import MappingProxyType

from learning.ops.spec import (
    FORWARD_TOLERANCES,
    ROW_CPU_SHAPES,
    ROW_SHAPES,
    ROWS,
    OpSpec,
    elementwise_flops,
    row_inputs,
    row_reduction_bytes,
)


def oracle(x):
    return x.amax(dim=-1)


SPEC = OpSpec(
    name="max", shape_names=ROWS, default_shapes=ROW_SHAPES, cpu_shapes=ROW_CPU_SHAPES,
    module="kernels.reductions", function="row_max", make_inputs=row_inputs, oracle=oracle,
    baselines=MappingProxyType({"torch": lambda x: x.amax(dim=-1)}),
    logical_bytes=row_reduction_bytes, flops=elementwise_flops, tolerances=FORWARD_TOLERANCES,
    exercise="reductions", reduces_rows=True,
)
