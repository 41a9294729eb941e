"""Checks of Lesson 06 (GEMM FLOPs, tiles, reduced-precision reduction): ``gemm_arithmetic``

Graded as exercise ``gemm_arithmetic``; see :mod:`learning.check.foundations`.
"""

from __future__ import annotations

import math
import random

import torch

from learning import ops
from learning.check.foundations.support import (
    Check,
    Learner,
    choice,
    close,
    fail,
    random_shape,
    show,
)
from learning.correctness import compare


def _random_gemm(rng: random.Random) -> tuple[int, int, int]:
    return random_shape(rng, 3, 1, 5000)


def _check_gemm_numbers(learner: Learner, rng: random.Random) -> None:
    spec = ops.get("matmul")
    for shape in [(3000, 1999, 1023), *spec.cpu_shapes, _random_gemm(rng), _random_gemm(rng)]:
        m, n, k = shape
        dtype = rng.choice(spec.dtypes)
        flops, min_bytes = spec.flops(shape), spec.logical_bytes(shape, dtype)
        got = learner.gemm_flops(m, n, k)
        if got != flops:
            hint = (
                "each term is a multiply AND an add: 2*M*N*K"
                if got == m * n * k
                else ("M*N outputs, each a dot product of length K")
            )
            fail(f"gemm_flops({m}, {n}, {k})", f"{flops} (learning.ops 'matmul')", got, hint)
        got = learner.gemm_min_bytes(m, n, k, dtype)
        if got != min_bytes:
            hint = {
                (m * k + k * n) * dtype.itemsize: "C is written too",
                m * k + k * n + m * n: "those are elements; multiply by the element size",
            }.get(got, "read A (M x K) and B (K x N) once, write C (M x N) once")
            fail(
                f"gemm_min_bytes({m}, {n}, {k}, {show(dtype)})",
                f"{min_bytes} (learning.ops)",
                got,
                hint,
            )
        got = learner.arithmetic_intensity(m, n, k, dtype)
        if not close(got, flops / min_bytes, 1e-9):
            fail(
                f"arithmetic_intensity({m}, {n}, {k}, {show(dtype)})",
                flops / min_bytes,
                got,
                "FLOPs divided by the minimum bytes, as floats",
            )


def _tile_cases(rng: random.Random) -> list[tuple[tuple[int, int, int], tuple[int, int, int]]]:
    spec = ops.get("matmul")
    tiles = lambda: tuple(rng.choice([8, 16, 32]) for _ in range(3))
    return [(spec.cpu_shapes[-1], (16, 32, 16)), (random_shape(rng, 3, 20, 90), tiles())]


def _check_blocked_oracle(learner: Learner, rng: random.Random) -> None:
    spec = ops.get("matmul")
    for dtype in spec.dtypes:
        for shape, tiles in _tile_cases(rng):
            inputs = spec.inputs(shape, dtype, seed=rng.randrange(2**31))
            got = learner.blocked_matmul(inputs["a"], inputs["b"], *tiles)
            verdict = compare(got, spec.expected(inputs)[0], spec.tolerances[dtype], dtype=dtype)
            if not verdict.passed:
                fail(
                    f"M, N, K = {shape}, {show(dtype)}, tiles (m, n, k) = {tiles}",
                    "the float64 oracle within tolerance",
                    verdict.reason,
                    "edge tiles are smaller: slice with [i : i + tile], let Python stop at the "
                    "end, and write each output tile once after its K loop",
                )


def _several_tiles_case(rng: random.Random) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """A shape of 20-90 in each dimension and tiles of 8 or 16: at least two tiles along every
    dimension, so that one big product can never pass for the blocked loop."""
    return random_shape(rng, 3, 20, 90), tuple(rng.choice([8, 16]) for _ in range(3))


def _k_steps_case(rng: random.Random) -> tuple[torch.Tensor, torch.Tensor, tuple[int, ...]]:
    """Inputs on which a float16 accumulator's result shows every K step: ``a`` is ones, the
    first K tile of ``b`` sums to 2048 and the rest holds random 0s and 1s. Every tile product
    is a whole number below 2048 (exact in any order), but above 2048 float16 keeps only even
    numbers, so each step's rounding, and so the result, depends on where the steps fall.
    Drawn again until one big product differs from the tile-by-tile result."""
    while True:
        shape, tiles = _several_tiles_case(rng)
        m, n, k = shape
        tile_k = tiles[2]
        generator = torch.Generator().manual_seed(rng.randrange(2**31))
        b = torch.randint(0, 2, (k, n), generator=generator).to(torch.float16)
        b[:tile_k] = 2048 / tile_k
        a = torch.ones((m, k), dtype=torch.float16)
        if not torch.equal(_k_steps(a, b, tile_k), (a.float() @ b.float()).half()):
            return a, b, (*shape, *tiles)


def _k_steps(a: torch.Tensor, b: torch.Tensor, tile_k: int) -> torch.Tensor:
    """The float16 accumulation of one product per K step (every product here is exact)."""
    accumulator = torch.zeros((a.shape[0], b.shape[1]), dtype=torch.float16)
    for depth in range(0, a.shape[1], tile_k):
        step = a[:, depth : depth + tile_k].float() @ b[depth : depth + tile_k].float()
        accumulator = (accumulator.float() + step).half()
    return accumulator


def _check_blocked_tiles(learner: Learner, rng: random.Random) -> None:
    a, b, (m, n, k, *tiles) = _k_steps_case(rng)
    got = learner.blocked_matmul(a, b, *tiles, accumulate_dtype=torch.float16)
    want = _k_steps(a, b, tiles[2])
    label = (
        f"M, N, K = {(m, n, k)}, tiles (m, n, k) = {tuple(tiles)}, accumulate_dtype=float16; "
        "a = ones, b: whole numbers whose running float16 sum rounds at every K step"
    )
    if isinstance(got, torch.Tensor) and got.shape == want.shape and torch.equal(got, want):
        return
    hint = (
        "one `a_tile @ b_tile` per (row tile, column tile, K step), added into the float16 "
        "accumulator after each K step: not one big a @ b, the loop structure is the lesson"
    )
    if isinstance(got, torch.Tensor) and torch.equal(got, (a.float() @ b.float()).half()):
        hint = "the result is one big a @ b rounded once: " + hint
    shown = got.flatten()[:4].tolist() if isinstance(got, torch.Tensor) else got
    fail(label, f"the tile-by-tile result, first values {want.flatten()[:4].tolist()}", shown,
         hint)  # fmt: skip


def _report_tile_products(learner: Learner, rng: random.Random) -> None:
    """No points: the count comes from the learner's process, which could report anything."""
    shape, tiles = _several_tiles_case(rng)
    inputs = ops.get("matmul").inputs(shape, torch.float32, seed=rng.randrange(2**31))
    _, calls = learner.traced("blocked_matmul", inputs["a"], inputs["b"], *tiles)
    products = sum(1 for name, _ in calls if name in ("mm", "addmm", "matmul", "bmm"))
    want = math.prod(math.ceil(size / tile) for size, tile in zip(shape, tiles, strict=True))
    if products != want:
        fail(
            f"M, N, K = {shape}, tiles (m, n, k) = {tiles}",
            f"{want} tile products (ceil(M/tile_m) * ceil(N/tile_n) * ceil(K/tile_k))",
            f"{products}, as the check process counted them",
            "one `a_tile @ b_tile` per (row tile, column tile, K step): a GPU kernel's "
            "programs each own one output tile",
        )


def _check_blocked_accumulation(learner: Learner, rng: random.Random) -> None:
    tile_k = rng.choice([8, 16])
    m, n, k = rng.randint(2, 9), rng.randint(2, 9), 16 * tile_k
    a = torch.ones((m, k), dtype=torch.float16)
    b = torch.zeros((k, n), dtype=torch.float16)
    b[:tile_k] = 2048 / tile_k  # the first K step makes 2048 ...
    b[tile_k::tile_k] = 1.0  # ... and each of the other 15 adds exactly 1
    label = (
        f"a = ones ({m}, {k}) float16, b: the first K tile sums to 2048, "
        f"15 more add 1 each; tile_k={tile_k}"
    )
    for accumulate, want, hint in (
        (
            torch.float32,
            2064.0,
            "accumulate in float32 and round to float16 once (2063 -> 2064); "
            "a float16 accumulator stays at 2048 because 2048 + 1 rounds back to 2048",
        ),
        (
            torch.float16,
            2048.0,
            "honour accumulate_dtype: make the accumulator that dtype, so "
            "the lesson can show what a reduced-precision reduction does",
        ),
    ):
        got = learner.blocked_matmul(a, b, 4, 4, tile_k, accumulate_dtype=accumulate)
        if (
            not isinstance(got, torch.Tensor)
            or got.shape != (m, n)
            or not bool((got == want).all())
        ):
            shown = got.flatten()[:4].tolist() if isinstance(got, torch.Tensor) else got
            fail(
                f"{label}, accumulate_dtype={show(accumulate)}",
                f"every element {want:g}",
                shown,
                hint,
            )


def _planned_bytes(m, n, k, tile_m, tile_n, itemsize) -> int:
    moved = 0
    for row in range(0, m, tile_m):
        for col in range(0, n, tile_n):
            rows, cols = min(tile_m, m - row), min(tile_n, n - col)
            moved += rows * k + k * cols + rows * cols
    return moved * itemsize


def _check_tile_plan(learner: Learner, rng: random.Random) -> None:
    spec = ops.get("matmul")
    cases = [((3000, 1999, 1023), (128, 128)), ((75, 93, 61), (256, 256))]
    cases += [
        (_random_gemm(rng), (rng.choice([32, 64, 128, 256]), rng.choice([32, 64, 128])))
        for _ in range(3)
    ]
    for (m, n, k), (tile_m, tile_n) in cases:
        dtype = rng.choice(spec.dtypes)
        want = _planned_bytes(m, n, k, tile_m, tile_n, dtype.itemsize)
        got = learner.tile_plan_bytes(m, n, k, tile_m, tile_n, dtype)
        if got == want:
            continue
        if tile_m >= m and tile_n >= n:
            hint = (
                "one tile covers all of C, so A and B are read once: the registry's minimum, "
                f"{spec.logical_bytes((m, n, k), dtype)}"
            )
        elif got == _planned_bytes(
            math.ceil(m / tile_m) * tile_m,
            math.ceil(n / tile_n) * tile_n,
            k,
            tile_m,
            tile_n,
            dtype.itemsize,
        ):
            hint = "edge tiles are smaller: masked loads do not read the padding past M and N"
        else:
            hint = (
                "every tile reads a rows x K panel of A and a K x cols panel of B: each A row "
                "is read once per tile column, each B column once per tile row; C is written once"
            )
        fail(
            f"tile_plan_bytes({m}, {n}, {k}, tile_m={tile_m}, tile_n={tile_n}, {show(dtype)})",
            want,
            got,
            hint,
        )


def _check_reduced_precision(learner: Learner, rng: random.Random) -> None:
    choice(
        learner,
        "reduced_precision_reduction",
        learner.REDUCED_PRECISION_CHOICES,
        "c",
        "a GEMM's reduction is the sum along K; the flag lets that sum's partial results be "
        "float16 (TF32 has its own flag, allow_tf32)",
    )


CHECKS = (
    Check(
        "gemm_flops, gemm_min_bytes, arithmetic_intensity match the registry", _check_gemm_numbers
    ),
    Check("blocked_matmul matches the oracle on irregular shapes", _check_blocked_oracle),
    Check("blocked_matmul multiplies tile by tile", _check_blocked_tiles),
    Check("blocked_matmul makes one product per tile (as its process reports)",
          _report_tile_products, points=0.0),  # fmt: skip
    Check("blocked_matmul accumulates in accumulate_dtype", _check_blocked_accumulation),
    Check("tile_plan_bytes counts every panel read", _check_tile_plan),
    Check("reduced_precision_reduction", _check_reduced_precision),
)
