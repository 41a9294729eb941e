"""Lesson 05: residual RMSNorm with FP32 semantics.

In a transformer block the residual stream is added to a sublayer's output and normalized:

    h = x + residual
    y = h * rsqrt(mean(h^2 over the row) + eps) * weight

*FP32 semantics* means: however ``x``, ``residual`` and ``weight`` are stored (float16,
bfloat16), ``h``, the mean of squares and the products are computed in float32, and only ``y``
is rounded to the storage dtype, once. The registry's ``rmsnorm_composition`` is that
definition written as a PyTorch user writes it; each line is a separate eager kernel that
reads its inputs from memory and writes its output back. A fused kernel reads ``x``,
``residual`` and ``weight`` once and writes ``y`` once; the float32 intermediates never leave
the chip. This lesson counts both.
"""

from __future__ import annotations

import torch


def residual_rmsnorm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float
) -> torch.Tensor:
    """Residual RMSNorm over the last dimension with exact FP32 semantics; returns ``x.dtype``."""
    ### BEGIN SOLUTION
    ### TODO: cast x, residual and weight to float32 BEFORE adding; eps goes inside the rsqrt
    h = x.float() + residual.float()
    inv_rms = torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (h * inv_rms * weight.float()).to(x.dtype)
    ### END SOLUTION


def composition_kernel_count() -> int:
    """How many eager kernels ``learning.ops.rmsnorm_composition`` launches for float16 inputs.

    Read its source line by line (``inspect.getsource``): every operator that produces a new
    tensor is one kernel, and a dtype conversion that changes the dtype is an operator too.
    """
    ### BEGIN SOLUTION
    ### TODO: three casts in, add, pow, mean, + eps, rsqrt, two multiplies, one cast out
    return 11
    ### END SOLUTION


def composition_bytes(shape: tuple[int, int], dtype: torch.dtype) -> int:
    """Bytes the eager composition moves for ``(M, N)`` inputs of a 2-byte ``dtype`` (fp16, bf16).

    Each kernel reads every element of each tensor input once and writes its output once; a
    Python number (``eps``) costs nothing. Intermediates are float32 (4 bytes); the row
    statistics are ``(M, 1)``; the weight is ``(N,)``.
    """
    ### BEGIN SOLUTION
    ### TODO: list the 11 kernels with the shape and dtype of each input and output, then add up
    rows, cols = shape
    half = dtype.itemsize
    full = 4
    matrix, row, column = rows * cols, rows, cols
    kernels = [
        (matrix * half, matrix * full),  # x.float()
        (matrix * half, matrix * full),  # residual.float()
        (2 * matrix * full, matrix * full),  # h = x32 + r32
        (matrix * full, matrix * full),  # h.pow(2)
        (matrix * full, row * full),  # .mean(dim=-1, keepdim=True)
        (row * full, row * full),  # + eps
        (row * full, row * full),  # rsqrt
        (matrix * full + row * full, matrix * full),  # h * inv_rms
        (column * half, column * full),  # weight.float()
        (matrix * full + column * full, matrix * full),  # * weight
        (matrix * full, matrix * half),  # .to(x.dtype)
    ]
    return sum(read + write for read, write in kernels)
    ### END SOLUTION


def fused_bytes(shape: tuple[int, int], dtype: torch.dtype) -> int:
    """Bytes one fused kernel moves: read x, residual (M x N) and weight (N), write y (M x N)."""
    ### BEGIN SOLUTION
    ### TODO: four tensors, each touched once, all in the storage dtype
    rows, cols = shape
    return (3 * rows * cols + cols) * dtype.itemsize
    ### END SOLUTION
