"""A learner's row sum and row max: tiles of 4 rows x 64 columns, walked along the row.

Each program keeps a [4, 64] float32 accumulator (a running sum, or a running maximum that
starts at -inf) and reduces it across the columns at the end.
"""

import torch
import triton
import triton.language as tl

ROWS = 4
BLOCK = 64


@triton.jit
def _sum_tiles(x_ptr, out_ptr, n_rows, n_cols, stride, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    lanes = tl.arange(0, BLOCK)
    total = tl.zeros((ROWS, BLOCK), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + lanes
        mask = (rows < n_rows)[:, None] & (cols < n_cols)[None, :]
        tile = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=0.0)
        total += tile.to(tl.float32)
    tl.store(out_ptr + rows, tl.sum(total, axis=1).to(out_ptr.dtype.element_ty),
             mask=rows < n_rows)


@triton.jit
def _max_tiles(x_ptr, out_ptr, n_rows, n_cols, stride, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    lanes = tl.arange(0, BLOCK)
    best = tl.full((ROWS, BLOCK), -float("inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + lanes
        mask = (rows < n_rows)[:, None] & (cols < n_cols)[None, :]
        tile = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask,
                       other=-float("inf"))
        best = tl.maximum(best, tile.to(tl.float32))
    tl.store(out_ptr + rows, tl.max(best, axis=1).to(out_ptr.dtype.element_ty),
             mask=rows < n_rows)


def _reduce(kernel, x):
    n_rows, n_cols = x.shape
    out = torch.empty((n_rows,), dtype=x.dtype, device=x.device)
    kernel[(triton.cdiv(n_rows, ROWS),)](x, out, n_rows, n_cols, x.stride(0), ROWS=ROWS,
                                         BLOCK=BLOCK)
    return out


def row_sum(x):
    return _reduce(_sum_tiles, x)


def row_max(x):
    return _reduce(_max_tiles, x)
