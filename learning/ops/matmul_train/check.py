"""What the kernel checker reads about the GEMM training step, besides its spec (no run
imports this module; ``learning.check.op_data`` says what the checker asks of it).

* a and b may have rows further apart than their width, and are drawn transposed too, as in
  the forward (``learning.ops.matmul.check``).
* **The weight gradient, not split.** The wrapper splits dB's reduction over M (split-K) when
  the output has few tiles; with N and K past 128 it has more tiles than split-K takes, and
  the unsplit kernel runs.
* **The typical mistakes**, each as the mistaken kernels compute the gradients, in float64:
  an operand not transposed, the two gradient products' operands swapped, a reduction loop's
  last, partial step dropped (tried at 16 to 128 a step), and split-K's first slice alone.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import torch

from learning.ops.matmul.check import STRIDED, TRANSPOSED

__all__ = ["PATHS", "STRIDED", "mistakes"]


def _gemm_sizes(low: int, high: int) -> Callable[[random.Random], tuple[int, ...]]:
    """M small; N and K past 128 (more output tiles than the weight gradient splits)."""
    return lambda rng: (rng.randint(2, 24), rng.randint(low, high), rng.randint(low, high))


PATHS = (
    TRANSPOSED,
    {"name": "weight gradient, not split",
     "what": "N and K past 128: a weight gradient with more tiles than split-K takes",
     "shape": _gemm_sizes(129, 170)},
)  # fmt: skip


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def mistakes(inputs: dict, dtype: torch.dtype):
    a, b, grad_c = inputs["a"], inputs["b"], inputs["grad_output"]
    m, k = a.shape
    n = b.shape[1]
    if n == k:
        yield ("grad_a", grad_c @ b, "grad_a matches dC @ B: B must be read transposed, "
               "dA = dC @ B^T (pass b.T: the same memory, strides swapped)")  # fmt: skip
    if m == k:
        yield ("grad_b", a @ grad_c, "grad_b matches A @ dC: A must be read transposed, "
               "dB = A^T @ dC (pass a.T)")  # fmt: skip
    if m == k and n == k:
        yield ("grad_a", grad_c @ a, "grad_a matches dC @ A: dA multiplies dC by B^T, the "
               "operands of the two gradient products were swapped")  # fmt: skip
    for block in (16, 32, 64, 128):
        kept = n - n % block
        if 0 < kept < n:
            yield ("grad_a", grad_c[:, :kept] @ b[:, :kept].T,
                   f"grad_a matches dC @ B^T over only the first {kept} of N={n}: the "
                   "reduction loop of dA (over N) dropped its tail; loop to cdiv and mask "
                   "the last step")  # fmt: skip
        kept = m - m % block
        if 0 < kept < m:
            yield ("grad_b", a[:kept].T @ grad_c[:kept],
                   f"grad_b matches A^T @ dC over only the first {kept} of M={m} rows: the "
                   "reduction of dB (over M, the token count) dropped its tail; loop to "
                   "cdiv(M, BLOCK_K) and mask the last step")  # fmt: skip
    # split-K: the first slice's partial sum alone (slices are whole steps of BLOCK_K rows)
    firsts = {_cdiv(_cdiv(m, splits), block) * block for splits in range(2, 9)
              for block in (16, 32, 64)}  # fmt: skip
    for length in sorted(n for n in firsts if n < m):
        yield ("grad_b", a[:length].T @ grad_c[:length],
               f"grad_b matches the first reduction slice alone (rows 0-{length - 1} of M): "
               "with split-K each slice writes a partial sum, and all of them must be added "
               "(a second kernel over the partials)")  # fmt: skip
