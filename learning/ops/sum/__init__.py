"""Sum over the last dimension.

One value a row: the input is read once and the output is a column, so the time is the read.
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
    return x.sum(dim=-1)


SPEC = OpSpec(
    name="sum", shape_names=ROWS, default_shapes=ROW_SHAPES, cpu_shapes=ROW_CPU_SHAPES,
    module="kernels.reductions", function="row_sum", make_inputs=row_inputs, oracle=oracle,
    baselines=MappingProxyType({"torch": lambda x: x.sum(dim=-1)}),
    logical_bytes=row_reduction_bytes, flops=elementwise_flops, tolerances=FORWARD_TOLERANCES,
    exercise="reductions", reduces_rows=True,
)
