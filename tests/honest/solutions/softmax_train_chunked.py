"""A learner's softmax forward and backward, both walking each row in chunks of up to 512.

The forward is an online softmax (running max and rescaled running sum), written straight
into the output; the backward first sums y * dy over the row, then writes dx into a float32
buffer that the wrapper casts to y's dtype.
"""

import torch
import triton
import triton.language as tl

MAX_CHUNK = 512


def _chunk(n_cols):
    return min(MAX_CHUNK, triton.next_power_of_2(n_cols))


@triton.jit
def _forward_chunks(x_ptr, y_ptr, n_cols, x_stride, y_stride, CHUNK: tl.constexpr):
    x_row = x_ptr + tl.program_id(0) * x_stride
    y_row = y_ptr + tl.program_id(0) * y_stride
    lanes = tl.arange(0, CHUNK)
    row_max = tl.full([], -float("inf"), dtype=tl.float32)
    row_sum = tl.zeros([], dtype=tl.float32)
    for start in range(0, n_cols, CHUNK):
        cols = start + lanes
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        chunk_max = tl.maximum(tl.max(x, axis=0), row_max)
        row_sum = row_sum * tl.exp(row_max - chunk_max) + tl.sum(tl.exp(x - chunk_max), axis=0)
        row_max = chunk_max
    for start in range(0, n_cols, CHUNK):
        cols = start + lanes
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        tl.store(y_row + cols, tl.exp(x - row_max) / row_sum, mask=cols < n_cols)


@triton.jit
def _backward_chunks(y_ptr, dy_ptr, dx_ptr, n_cols, y_stride, dy_stride, dx_stride,
                     CHUNK: tl.constexpr):
    row = tl.program_id(0)
    lanes = tl.arange(0, CHUNK)
    dot = tl.zeros((CHUNK,), dtype=tl.float32)
    for start in range(0, n_cols, CHUNK):
        cols = start + lanes
        mask = cols < n_cols
        y = tl.load(y_ptr + row * y_stride + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * dy_stride + cols, mask=mask, other=0.0).to(tl.float32)
        dot += y * dy
    total = tl.sum(dot, axis=0)
    for start in range(0, n_cols, CHUNK):
        cols = start + lanes
        mask = cols < n_cols
        y = tl.load(y_ptr + row * y_stride + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * dy_stride + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(dx_ptr + row * dx_stride + cols, y * (dy - total), mask=mask)


class _ChunkedSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        _forward_chunks[(x.shape[0],)](x, y, x.shape[1], x.stride(0), y.stride(0),
                                       CHUNK=_chunk(x.shape[1]))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        dx32 = torch.empty(y.shape, dtype=torch.float32, device=y.device)
        _backward_chunks[(y.shape[0],)](y, dy, dx32, y.shape[1], y.stride(0), dy.stride(0),
                                        dx32.stride(0), CHUNK=_chunk(y.shape[1]))
        return dx32.to(y.dtype)


def softmax(x):
    return _ChunkedSoftmax.apply(x)
