"""A learner's row sum and row max: one program a row, the whole row as one block.

The sum is accumulated in float32 into a float32 buffer that the wrapper casts to the input's
dtype at the end; the max is exact, so it is stored in the input's dtype directly.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _sum_row(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    values = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(values.to(tl.float32), axis=0))


@triton.jit
def _max_row(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    values = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(out_ptr + row, tl.max(values, axis=0))


def row_sum(x):
    sums = torch.empty((x.shape[0],), dtype=torch.float32, device=x.device)
    _sum_row[(x.shape[0],)](x, sums, x.shape[1], x.stride(0),
                            BLOCK=triton.next_power_of_2(x.shape[1]))
    return sums.to(x.dtype)


def row_max(x):
    out = torch.empty((x.shape[0],), dtype=x.dtype, device=x.device)
    _max_row[(x.shape[0],)](x, out, x.shape[1], x.stride(0),
                            BLOCK=triton.next_power_of_2(x.shape[1]))
    return out
