"""A learner's matmul that makes both operands contiguous and writes a float32 C, then casts.

``a.contiguous()`` and ``b.contiguous()`` copy a transposed or strided operand, so the kernel
only knows row-major operands; tiles of 16 x 64, K in steps of 16, walked by a 1-D grid.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _row_major_gemm(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr,
                    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    tiles_n = tl.cdiv(N, BLOCK_N)
    rows = (tl.program_id(0) // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = (tl.program_id(0) % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        ks = k + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rows[:, None] * K + ks[None, :],
                    mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0).to(tl.float32)
        b = tl.load(b_ptr + ks[:, None] * N + cols[None, :],
                    mask=(ks[:, None] < K) & (cols[None, :] < N), other=0.0).to(tl.float32)
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc,
             mask=(rows[:, None] < M) & (cols[None, :] < N))


def matmul(a, b):
    a, b = a.contiguous(), b.contiguous()
    m, k = a.shape
    n = b.shape[1]
    c32 = torch.empty((m, n), dtype=torch.float32, device=a.device)
    grid = (triton.cdiv(m, 16) * triton.cdiv(n, 64),)
    _row_major_gemm[grid](a, b, c32, m, n, k, BLOCK_M=16, BLOCK_N=64, BLOCK_K=16)
    return c32.to(a.dtype)
