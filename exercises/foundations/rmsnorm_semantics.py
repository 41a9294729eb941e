# Your copy of reference/foundations/rmsnorm_semantics.py,
# made by scripts/make_exercises.py with the solution regions replaced by TODOs.
# This file is yours to edit; `python -m learning.check <exercise>` grades it.
# (Maintainers: edit the reference and rerun the script, never this copy.)
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
    # TODO: cast x, residual and weight to float32 BEFORE adding; eps goes inside the rsqrt
    raise NotImplementedError(
        "exercises/foundations/rmsnorm_semantics.py:residual_rmsnorm: cast x, residual and weight "
        "to float32 BEFORE adding; eps goes inside the rsqrt"
    )


def composition_kernel_count() -> int:
    """How many eager kernels ``learning.ops.rmsnorm_composition`` launches for float16 inputs.

    Read its source line by line (``inspect.getsource``): every operator that produces a new
    tensor is one kernel, and a dtype conversion that changes the dtype is an operator too.
    """
    # TODO: three casts in, add, pow, mean, + eps, rsqrt, two multiplies, one cast out
    raise NotImplementedError(
        "exercises/foundations/rmsnorm_semantics.py:composition_kernel_count: three casts in, add, "
        "pow, mean, + eps, rsqrt, two multiplies, one cast out"
    )


def composition_bytes(shape: tuple[int, int], dtype: torch.dtype) -> int:
    """Bytes the eager composition moves for ``(M, N)`` inputs of a 2-byte ``dtype`` (fp16, bf16).

    Each kernel reads every element of each tensor input once and writes its output once; a
    Python number (``eps``) costs nothing. Intermediates are float32 (4 bytes); the row
    statistics are ``(M, 1)``; the weight is ``(N,)``.
    """
    # TODO: list the 11 kernels with the shape and dtype of each input and output, then add up
    raise NotImplementedError(
        "exercises/foundations/rmsnorm_semantics.py:composition_bytes: list the 11 kernels with the"
        " shape and dtype of each input and output, then add up"
    )


def fused_bytes(shape: tuple[int, int], dtype: torch.dtype) -> int:
    """Bytes one fused kernel moves: read x, residual (M x N) and weight (N), write y (M x N)."""
    # TODO: four tensors, each touched once, all in the storage dtype
    raise NotImplementedError(
        "exercises/foundations/rmsnorm_semantics.py:fused_bytes: four tensors, each touched once, "
        "all in the storage dtype"
    )
