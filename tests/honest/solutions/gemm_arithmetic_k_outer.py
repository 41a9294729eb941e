"""A learner's answers to exercises/foundations/gemm_arithmetic.py (lesson 06), K outermost.

The blocked product keeps one accumulator the size of C and adds each K step's tile products
into it, tile by tile: every tile still sums its K steps in order in the accumulate dtype.
"""
# ruff: noqa: F821  (the exercise's own names)

import math

import torch


def gemm_flops(m: int, n: int, k: int) -> int:
    return 2 * math.prod((m, n, k))


def gemm_min_bytes(m: int, n: int, k: int, dtype: torch.dtype) -> int:
    return sum(rows * cols for rows, cols in ((m, k), (k, n), (m, n))) * dtype.itemsize


def arithmetic_intensity(m: int, n: int, k: int, dtype: torch.dtype) -> float:
    flop_count = gemm_flops(m, n, k)
    return flop_count / gemm_min_bytes(m, n, k, dtype)


def blocked_matmul(
    a: torch.Tensor,
    b: torch.Tensor,
    tile_m: int,
    tile_n: int,
    tile_k: int,
    accumulate_dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    m, k = a.shape
    n = b.shape[1]
    acc = torch.zeros((m, n), dtype=accumulate_dtype)
    for kk in range(0, k, tile_k):
        for i in range(0, m, tile_m):
            for j in range(0, n, tile_n):
                product = (a[i : i + tile_m, kk : kk + tile_k].to(accumulate_dtype)
                           @ b[kk : kk + tile_k, j : j + tile_n].to(accumulate_dtype))
                acc[i : i + tile_m, j : j + tile_n] += product
    return acc.to(a.dtype)


def tile_plan_bytes(m: int, n: int, k: int, tile_m: int, tile_n: int, dtype: torch.dtype) -> int:
    row_tiles, col_tiles = -(-m // tile_m), -(-n // tile_n)
    return (col_tiles * m * k + row_tiles * k * n + m * n) * dtype.itemsize


def reduced_precision_reduction() -> str:
    return "c"
