"""A learner's answers to exercises/foundations/gemm_arithmetic.py (lesson 06).

The blocked product walks the tiles of C in row-major order, and each tile's K steps in turn.
"""
# ruff: noqa: F821  (the exercise's own names)

import torch


def gemm_flops(m: int, n: int, k: int) -> int:
    multiplies = m * n * k
    adds = m * n * k
    return multiplies + adds


def gemm_min_bytes(m: int, n: int, k: int, dtype: torch.dtype) -> int:
    a, b, c = m * k, k * n, m * n
    return (a + b + c) * dtype.itemsize


def arithmetic_intensity(m: int, n: int, k: int, dtype: torch.dtype) -> float:
    return gemm_flops(m, n, k) / gemm_min_bytes(m, n, k, dtype)


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
    c = torch.zeros((m, n), dtype=a.dtype)
    for i in range(0, m, tile_m):
        for j in range(0, n, tile_n):
            acc = torch.zeros((min(tile_m, m - i), min(tile_n, n - j)), dtype=accumulate_dtype)
            for kk in range(0, k, tile_k):
                left = a[i : i + tile_m, kk : kk + tile_k].to(accumulate_dtype)
                right = b[kk : kk + tile_k, j : j + tile_n].to(accumulate_dtype)
                acc = acc + left @ right
            c[i : i + tile_m, j : j + tile_n] = acc.to(a.dtype)
    return c


def tile_plan_bytes(m: int, n: int, k: int, tile_m: int, tile_n: int, dtype: torch.dtype) -> int:
    total = 0
    for i in range(0, m, tile_m):
        for j in range(0, n, tile_n):
            rows, cols = min(tile_m, m - i), min(tile_n, n - j)
            total += rows * k + k * cols + rows * cols
    return total * dtype.itemsize


def reduced_precision_reduction() -> str:
    return "c"
