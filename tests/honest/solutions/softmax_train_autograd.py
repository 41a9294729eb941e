"""A learner's softmax with a Triton backward: an autograd Function, one program a row each way.

The forward saves its output y; the backward makes the incoming gradient contiguous
(``dy.contiguous()``: autograd may hand over any layout) and computes
dx = y * (dy - sum(y * dy)) in float32.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _forward(x_ptr, y_ptr, n_cols, x_stride, y_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    numerator = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * y_stride + cols, numerator / tl.sum(numerator, axis=0), mask=mask)


@triton.jit
def _backward(y_ptr, dy_ptr, dx_ptr, n_cols, y_stride, dy_stride, dx_stride,
              BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    y = tl.load(y_ptr + row * y_stride + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * dy_stride + cols, mask=mask, other=0.0).to(tl.float32)
    dot = tl.sum(y * dy, axis=0)
    tl.store(dx_ptr + row * dx_stride + cols, y * (dy - dot), mask=mask)


class _Softmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        _forward[(x.shape[0],)](x, y, x.shape[1], x.stride(0), y.stride(0),
                                BLOCK=triton.next_power_of_2(x.shape[1]))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        dy = dy.contiguous()
        dx = torch.empty(y.shape, dtype=y.dtype, device=y.device)
        _backward[(y.shape[0],)](y, dy, dx, y.shape[1], y.stride(0), dy.stride(0), dx.stride(0),
                                 BLOCK=triton.next_power_of_2(y.shape[1]))
        return dx


def softmax(x):
    return _Softmax.apply(x)
