"""A learner's answers to exercises/measurement.py (lesson 07), every count written out."""
# ruff: noqa: F821  (the exercise's own names)

from collections.abc import Sequence


def speedup(baseline_ms: float, candidate_ms: float) -> float:
    return 1.0 / (candidate_ms / baseline_ms)


def amdahl_speedup(fraction: float, local_speedup: float) -> float:
    old_time = 1.0
    new_time = old_time * (1.0 - fraction) + old_time * fraction / local_speedup
    return old_time / new_time


def logical_gbps(num_bytes: int, ms: float) -> float:
    seconds = ms * 1e-3
    return num_bytes / seconds * 1e-9


def tflops(flop_count: int, ms: float) -> float:
    seconds = ms * 1e-3
    return flop_count / seconds * 1e-12


def flops(op: str, shape: Sequence[int]) -> int:
    if op == "add":
        rows, cols = shape
        return rows * cols
    if op == "matmul" or op == "matmul_train":
        m, n, k = shape
        one_gemm = 2 * m * n * k
        return one_gemm if op == "matmul" else one_gemm * 3
    raise ValueError(f"the course counts no FLOPs for {op!r}")


def logical_bytes(op: str, shape: Sequence[int], element_size: int) -> int:
    if op in ("matmul", "matmul_train"):
        m, n, k = shape
        one_gemm = m * k + k * n + m * n
        gemms = 1 if op == "matmul" else 3
        return gemms * one_gemm * element_size
    if op not in ("add", "softmax", "rmsnorm", "softmax_train", "rmsnorm_train"):
        raise ValueError(f"unknown op {op!r}")
    rows, cols = shape
    matrix = rows * cols
    if op == "add":
        elements = matrix + matrix + matrix
    elif op == "softmax":
        elements = matrix + matrix
    elif op == "rmsnorm":
        elements = matrix + matrix + matrix + cols
    elif op == "softmax_train":
        elements = (matrix + matrix) + (matrix + matrix + matrix)
    else:
        elements = (matrix * 3 + cols) + (matrix * 4 + cols + cols)
    return elements * element_size


def fits_in_l2(op: str, shape: Sequence[int], element_size: int, l2_bytes: int) -> bool:
    if op.endswith("_train"):
        raise ValueError("fits_in_l2 is for forward ops")
    footprint = logical_bytes(op, shape, element_size)
    return footprint <= l2_bytes


def summarize(samples_ms: Sequence[float]) -> Spread:
    if len(samples_ms) == 0:
        raise ValueError("no samples to summarize")
    ordered = sorted(list(samples_ms))
    count = len(ordered)
    if count % 2 == 1:
        median = ordered[count // 2]
    else:
        median = 0.5 * (ordered[count // 2 - 1] + ordered[count // 2])
    return Spread(median_ms=median, min_ms=ordered[0], max_ms=ordered[count - 1])


def paired_speedup(
    baseline_samples_ms: Sequence[float], candidate_samples_ms: Sequence[float]
) -> PairedSpeedup:
    if len(baseline_samples_ms) != len(candidate_samples_ms):
        raise ValueError("the two lists must hold the same rounds")
    if len(baseline_samples_ms) == 0:
        raise ValueError("no rounds")
    ratios = []
    slower = rounds = 0
    for index in range(len(baseline_samples_ms)):
        baseline, candidate = baseline_samples_ms[index], candidate_samples_ms[index]
        if baseline <= 0 or candidate <= 0:
            raise ValueError("a time must be positive")
        ratios.append(baseline / candidate)
        if baseline != candidate:
            rounds += 1
            if candidate > baseline:
                slower += 1
    return PairedSpeedup(speedup=summarize(ratios).median_ms, slower=slower, rounds=rounds)


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
    sentence = "On " + gpu + ", for " + case + ", " + variant + " took " + format_ms(median_ms)
    sentence += " under " + timing_mode + ", versus " + baseline + " at "
    sentence += format_ms(baseline_median_ms) + ". It passed " + check + ". "
    return sentence + "The result does not establish " + not_established + "."
