"""What a learner wrote into exercises/kernels/matmul.py for the training exercise, as its TODOs
say: the tile, the forward, and a backward whose dA goes through _matmul_kernel and whose dB
goes through _matmul_rows_kernel in _split_k's slices, whatever the dtype (the persistent
kernels are the course's).

Only these functions are the learner's; the rest of the file is the exercise as given
(``_launch`` among it).
"""
# ruff: noqa: F821  (the exercise's own names)

import torch
import triton
import triton.language as tl


@triton.jit
def _matmul_tile(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, EVEN_K: tl.constexpr, DOT_IN_FP32: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
):
    # tiles in row-major order (no grouping), every load masked
    tiles_n = tl.cdiv(N, BLOCK_N)
    row_block = tl.program_id(0) // tiles_n
    col_block = tl.program_id(0) % tiles_n
    rows = row_block * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = col_block * BLOCK_N + tl.arange(0, BLOCK_N)
    depth = tl.arange(0, BLOCK_K)
    total = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(0, K, BLOCK_K):
        ks = start + depth
        left = tl.load(a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak,
                       mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
        right = tl.load(b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn,
                        mask=(ks[:, None] < K) & (cols[None, :] < N), other=0.0)
        if DOT_IN_FP32:
            left = left.to(tl.float32)
            right = right.to(tl.float32)
        total = tl.dot(left, right, total, input_precision=INPUT_PRECISION)
    inside = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn,
             total.to(c_ptr.dtype.element_ty), mask=inside)


def matmul_fwd(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """C = A @ B through _matmul_kernel, whatever the dtype."""
    _check_pair(a, b, "matmul")
    return _launch(_matmul_kernel, a, b)


def matmul_bwd(
    grad_c: torch.Tensor, a: torch.Tensor, b: torch.Tensor, need_a: bool = True, need_b: bool = True
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """dA = dC @ B^T and dB = A^T @ dC, each transpose a view."""
    _check_pair(a, b, "matmul backward")
    _check_operand(grad_c, "grad_c", "matmul backward")
    grad_a = grad_b = None
    if need_a:
        grad_a = _launch(_matmul_kernel, grad_c, b.T)
    if need_b:
        slices = _split_k(a.shape[1], b.shape[1], a.shape[0], a.device)
        grad_b = _launch(_matmul_rows_kernel, a.T, grad_c, slices)
    return grad_a, grad_b
