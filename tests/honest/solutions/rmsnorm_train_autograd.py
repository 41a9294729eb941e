"""A learner's residual RMSNorm with a Triton backward.

The forward saves one float32 rstd a row. The backward writes dx (also residual's gradient)
from one program a row, and each row's dy * h_hat into a float32 (M x N) buffer; a second
kernel sums that buffer's columns into dweight, in float32, cast to the weight's dtype.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _forward(x_ptr, r_ptr, w_ptr, y_ptr, rstd_ptr, n_cols, x_stride, r_stride, y_stride, eps,
             BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    h = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=0.0).to(tl.float32)
    h += tl.load(r_ptr + row * r_stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(h * h, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * y_stride + cols, h * rstd * w, mask=mask)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def _backward(dy_ptr, x_ptr, r_ptr, w_ptr, rstd_ptr, dx_ptr, products_ptr, n_cols, dy_stride,
              x_stride, r_stride, dx_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    h = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=0.0).to(tl.float32)
    h += tl.load(r_ptr + row * r_stride + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * dy_stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.load(rstd_ptr + row)
    h_hat = h * rstd
    g = dy * w
    dx = rstd * (g - h_hat * (tl.sum(g * h_hat, axis=0) / n_cols))
    tl.store(dx_ptr + row * dx_stride + cols, dx, mask=mask)
    tl.store(products_ptr + row * n_cols + cols, dy * h_hat, mask=mask)


@triton.jit
def _column_sums(products_ptr, dw_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    for row in range(0, n_rows):
        total += tl.load(products_ptr + row * n_cols + cols, mask=mask, other=0.0)
    tl.store(dw_ptr + cols, total, mask=mask)


class _RMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, residual, weight, eps):
        n_rows, n_cols = x.shape
        y = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
        rstd = torch.empty((n_rows,), dtype=torch.float32, device=x.device)
        _forward[(n_rows,)](x, residual, weight, y, rstd, n_cols, x.stride(0),
                            residual.stride(0), y.stride(0), eps,
                            BLOCK=triton.next_power_of_2(n_cols))
        ctx.save_for_backward(x, residual, weight, rstd)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, residual, weight, rstd = ctx.saved_tensors
        n_rows, n_cols = x.shape
        dx = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
        products = torch.empty((n_rows, n_cols), dtype=torch.float32, device=x.device)
        _backward[(n_rows,)](dy, x, residual, weight, rstd, dx, products, n_cols, dy.stride(0),
                             x.stride(0), residual.stride(0), dx.stride(0),
                             BLOCK=triton.next_power_of_2(n_cols))
        dw32 = torch.empty((n_cols,), dtype=torch.float32, device=x.device)
        _column_sums[(triton.cdiv(n_cols, 128),)](products, dw32, n_rows, n_cols, BLOCK=128)
        return dx, dx, dw32.to(weight.dtype), None


def rmsnorm(x, residual, weight, eps=1e-6):
    return _RMSNorm.apply(x, residual, weight, eps)
