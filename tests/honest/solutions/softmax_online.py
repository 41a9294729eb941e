"""A learner's two-pass online softmax: chunks of up to 1024 columns, one program a row.

Pass one keeps a running maximum and a running sum per lane, rescaling the sum whenever the
maximum grows; the lanes are combined once at the end. Pass two reads the row again and
writes exp(x - max) / sum.
"""

import torch
import triton
import triton.language as tl

MAX_CHUNK = 1024


@triton.jit
def _online_softmax(x_ptr, y_ptr, n_cols, x_stride, y_stride, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    lanes = tl.arange(0, CHUNK)
    running_max = tl.full((CHUNK,), -float("inf"), dtype=tl.float32)
    running_sum = tl.zeros((CHUNK,), dtype=tl.float32)
    for start in range(0, n_cols, CHUNK):
        cols = start + lanes
        x = tl.load(x_ptr + row * x_stride + cols, mask=cols < n_cols,
                    other=-float("inf")).to(tl.float32)
        new_max = tl.maximum(running_max, x)
        rescale = tl.where(new_max == -float("inf"), 0.0, tl.exp(running_max - new_max))
        fresh = tl.where(x == -float("inf"), 0.0, tl.exp(x - new_max))
        running_sum = running_sum * rescale + fresh
        running_max = new_max
    row_max = tl.max(running_max, axis=0)
    weights = tl.where(running_max == -float("inf"), 0.0, tl.exp(running_max - row_max))
    row_sum = tl.sum(running_sum * weights, axis=0)
    for start in range(0, n_cols, CHUNK):
        cols = start + lanes
        mask = cols < n_cols
        x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=0.0).to(tl.float32)
        y = tl.exp(x - row_max) / row_sum
        tl.store(y_ptr + row * y_stride + cols, y, mask=mask)


def softmax(x):
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    chunk = min(MAX_CHUNK, triton.next_power_of_2(x.shape[1]))
    _online_softmax[(x.shape[0],)](x, y, x.shape[1], x.stride(0), y.stride(0), CHUNK=chunk)
    return y
