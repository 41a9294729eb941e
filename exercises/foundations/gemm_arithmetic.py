# Your copy of reference/foundations/gemm_arithmetic.py,
# made by scripts/make_exercises.py with the solution regions replaced by TODOs.
# This file is yours to edit; `python -m learning.check <exercise>` grades it.
# (Maintainers: edit the reference and rerun the script, never this copy.)
"""Lesson 06: matrix multiplication: FLOPs, tiles, reduced-precision reduction.

``C = A @ B`` with ``A`` of shape ``(M, K)`` and ``B`` of shape ``(K, N)``: each of the
``M * N`` outputs is a dot product of length ``K``, one multiply and one add per term, so a
GEMM does ``2 * M * N * K`` floating-point operations while it must move at least
``(M*K + K*N + M*N)`` elements. Their ratio, the *arithmetic intensity* (FLOP per byte),
grows with the size: GEMM can be limited by arithmetic rather than by memory.

A GPU kernel computes ``C`` in tiles: one program owns a ``tile_m x tile_n`` block of ``C``,
walks along ``K`` in steps of ``tile_k``, multiplies a tile of ``A`` by a tile of ``B`` and
adds the product into an accumulator that stays on the chip. Each program reads a whole
``tile_m x K`` panel of ``A`` and ``K x tile_n`` panel of ``B``, so big tiles mean less
re-reading. The accumulator's dtype is the *reduction precision*: float32 here, as in the
course's kernels; a "reduced-precision reduction" keeps partial sums in float16 instead.
"""

from __future__ import annotations

import math

import torch


def gemm_flops(m: int, n: int, k: int) -> int:
    """Floating-point operations of an ``(M, K) @ (K, N)`` matrix product."""
    # TODO: M*N dot products of length K; count the multiply AND the add of each term
    raise NotImplementedError(
        "exercises/foundations/gemm_arithmetic.py:gemm_flops: M*N dot products of length K; count "
        "the multiply AND the add of each term"
    )


def gemm_min_bytes(m: int, n: int, k: int, dtype: torch.dtype) -> int:
    """The fewest bytes a GEMM can move: read A and B once, write C once, all in ``dtype``."""
    # TODO: three matrices, M*K + K*N + M*N elements, times the element size
    raise NotImplementedError(
        "exercises/foundations/gemm_arithmetic.py:gemm_min_bytes: three matrices, M*K + K*N + M*N "
        "elements, times the element size"
    )


def arithmetic_intensity(m: int, n: int, k: int, dtype: torch.dtype) -> float:
    """FLOPs per byte at the minimum traffic: ``gemm_flops / gemm_min_bytes``."""
    # TODO: reuse the two functions above
    raise NotImplementedError(
        "exercises/foundations/gemm_arithmetic.py:arithmetic_intensity: reuse the two functions "
        "above"
    )


def blocked_matmul(
    a: torch.Tensor,
    b: torch.Tensor,
    tile_m: int,
    tile_n: int,
    tile_k: int,
    accumulate_dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """``a @ b`` computed tile by tile, as a GPU kernel's programs would; returns ``a.dtype``.

    For each output tile ``C[i:i+tile_m, j:j+tile_n]`` start an accumulator of zeros in
    ``accumulate_dtype``; for each ``kk`` in steps of ``tile_k`` multiply the tile of ``a`` by
    the tile of ``b`` with ``@`` (both converted to ``accumulate_dtype``) and add the product
    into the accumulator; then write the accumulator, rounded to ``a.dtype``, into ``C``.
    Slicing past the end of a dimension gives a smaller edge tile: that is the "mask".
    """
    # TODO: three nested loops (range(0, M, tile_m), range(0, N, tile_n), range(0, K, tile_k))
    raise NotImplementedError(
        "exercises/foundations/gemm_arithmetic.py:blocked_matmul: three nested loops (range(0, M, "
        "tile_m), range(0, N, tile_n), range(0, K, tile_k))"
    )


def tile_plan_bytes(m: int, n: int, k: int, tile_m: int, tile_n: int, dtype: torch.dtype) -> int:
    """Bytes read and written when every output tile reads its own panels of A and B.

    Each ``tile_m x tile_n`` output tile reads a ``rows x K`` panel of A and a ``K x cols``
    panel of B and writes its ``rows x cols`` block of C once, where ``rows`` and ``cols`` are
    the tile's real size (edge tiles are smaller: masked loads do not read past the end).
    Nothing is shared between tiles (no cache).
    """
    # TODO: every A row is re-read once per tile column, every B column once per tile row
    raise NotImplementedError(
        "exercises/foundations/gemm_arithmetic.py:tile_plan_bytes: every A row is re-read once per "
        "tile column, every B column once per tile row"
    )


REDUCED_PRECISION_CHOICES = {
    "a": "A and B are rounded to float16 before they are multiplied",
    "b": "float32 inputs are multiplied in TF32 (10-bit mantissa) on tensor cores",
    "c": "partial sums along K may be kept and added in float16 instead of float32",
    "d": "the output C is stored in float16",
}


def reduced_precision_reduction() -> str:
    """What ``torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = True`` permits.

    A key of REDUCED_PRECISION_CHOICES. (The course sets it to False: see ``ops.numerics_policy``.)
    """
    # TODO: which part of an fp16 GEMM is a "reduction"? (the inputs are fp16 in every choice)
    raise NotImplementedError(
        "exercises/foundations/gemm_arithmetic.py:reduced_precision_reduction: which part of an "
        "fp16 GEMM is a \"reduction\"? (the inputs are fp16 in every choice)"
    )
