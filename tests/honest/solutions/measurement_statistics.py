"""A learner's answers to exercises/measurement.py (lesson 07), leaning on ``statistics``."""
# ruff: noqa: F821  (the exercise's own names)

import statistics
from collections.abc import Sequence


def speedup(baseline_ms: float, candidate_ms: float) -> float:
    return baseline_ms / candidate_ms


def amdahl_speedup(fraction: float, local_speedup: float) -> float:
    return 1.0 / ((1.0 - fraction) + fraction / local_speedup)


def logical_gbps(num_bytes: int, ms: float) -> float:
    return (num_bytes / 1e9) / (ms / 1e3)


def tflops(flop_count: int, ms: float) -> float:
    return (flop_count / 1e12) / (ms / 1e3)


def flops(op: str, shape: Sequence[int]) -> int:
    match op:
        case "add":
            return shape[0] * shape[1]
        case "matmul":
            return 2 * shape[0] * shape[1] * shape[2]
        case "matmul_train":
            return 3 * flops("matmul", shape)
    raise ValueError(f"no FLOP count for {op}")


def logical_bytes(op: str, shape: Sequence[int], element_size: int) -> int:
    if op == "matmul":
        m, n, k = shape
        return (m * k + k * n + m * n) * element_size
    if op == "matmul_train":
        return 3 * logical_bytes("matmul", shape, element_size)
    rows, cols = shape
    matrix_passes = {"add": 3, "softmax": 2, "rmsnorm": 3, "softmax_train": 5, "rmsnorm_train": 7}
    vector_passes = {"rmsnorm": 1, "rmsnorm_train": 3}
    if op not in matrix_passes:
        raise ValueError(f"no byte count for {op}")
    return (matrix_passes[op] * rows * cols + vector_passes.get(op, 0) * cols) * element_size


def fits_in_l2(op: str, shape: Sequence[int], element_size: int, l2_bytes: int) -> bool:
    if "_train" in op:
        raise ValueError(f"{op} is a training step; fits_in_l2 takes a forward op")
    return not logical_bytes(op, shape, element_size) > l2_bytes


def summarize(samples_ms: Sequence[float]) -> Spread:
    if len(samples_ms) == 0:
        raise ValueError("summarize needs at least one sample")
    return Spread(statistics.median(samples_ms), min(samples_ms), max(samples_ms))


def paired_speedup(
    baseline_samples_ms: Sequence[float], candidate_samples_ms: Sequence[float]
) -> PairedSpeedup:
    if len(baseline_samples_ms) != len(candidate_samples_ms) or not baseline_samples_ms:
        raise ValueError("paired samples need two lists of the same, non-zero length")
    if any(sample <= 0 for sample in (*baseline_samples_ms, *candidate_samples_ms)):
        raise ValueError("every sample must be a positive time")
    ratios = [b / c for b, c in zip(baseline_samples_ms, candidate_samples_ms, strict=True)]
    lost = sum(1 for ratio in ratios if ratio < 1)
    decided = sum(1 for b, c in zip(baseline_samples_ms, candidate_samples_ms, strict=True)
                  if b != c)  # fmt: skip
    return PairedSpeedup(statistics.median(ratios), lost, decided)


def result_sentence(
    *,
    gpu: str,
    case: str,
    variant: str,
    median_ms: float,
    timing_mode: str,
    baseline: str,
    baseline_median_ms: float,
    check: str,
    not_established: str,
) -> str:
    parts = [
        f"On {gpu}, for {case}, {variant} took {format_ms(median_ms)} under {timing_mode},",
        f"versus {baseline} at {format_ms(baseline_median_ms)}.",
        f"It passed {check}.",
        f"The result does not establish {not_established}.",
    ]
    return " ".join(parts)
