"""A learner's matmul with a Triton backward: one strided GEMM kernel for all three products.

The forward computes C = A @ B; the backward computes dA = dC @ B^T and dB = A^T @ dC by
handing the same kernel transposed views (strides swapped, no copies). Each product is
accumulated and stored in float32, and the wrapper casts it to the operands' dtype.
"""

import torch
import triton
import triton.language as tl

BLOCK = 32


@triton.jit
def _strided_gemm(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, K, BLOCK):
        ks = k + tl.arange(0, BLOCK)
        a = tl.load(a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak,
                    mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn,
                    mask=(ks[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc += tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
    tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc,
             mask=(rows[:, None] < M) & (cols[None, :] < N))


def _product(a, b):
    """a @ b for any strides, in float32, cast to a's dtype."""
    m, k = a.shape
    n = b.shape[1]
    c32 = torch.empty((m, n), dtype=torch.float32, device=a.device)
    grid = (triton.cdiv(m, BLOCK), triton.cdiv(n, BLOCK))
    _strided_gemm[grid](a, b, c32, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        BLOCK=BLOCK)
    return c32.to(a.dtype)


class _Matmul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _product(a, b)

    @staticmethod
    def backward(ctx, grad_c):
        a, b = ctx.saved_tensors
        grad_a = _product(grad_c, b.T) if ctx.needs_input_grad[0] else None
        grad_b = _product(a.T, grad_c) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


def matmul(a, b):
    return _Matmul.apply(a, b)
