"""The checks of the rates, the ratios and the bytes: ``speedup``, ``amdahl_speedup``,
``logical_gbps``, ``tflops`` and ``flops``, ``logical_bytes`` and ``fits_in_l2``.
"""

from __future__ import annotations

import math
import random

from learning.check.measurement.support import (
    GB,
    GIB,
    L2_EXAMPLE_BYTES,
    Learner,
    call_text,
    count_text,
    expect_close,
    failure,
    random_ms,
    random_shape,
    registry_bytes,
    registry_flops,
    shape_convention,
    taught_ops,
    unit_mistakes,
)


def check_speedup(learner: Learner, rng: random.Random) -> None:
    cases = [(10.0, 5.0)] + [(random_ms(rng), random_ms(rng)) for _ in range(3)]
    for baseline, candidate in cases:
        got = learner.number("speedup", baseline, candidate)
        expected = baseline / candidate
        expect_close(
            got, expected, call=call_text("speedup", (baseline, candidate), {}), unit="x",
            worked=2.0,
            mistakes=[
                (candidate / baseline, "inverted: speedup is baseline / candidate, so a faster "
                 "candidate (a smaller time) gives a number above 1."),
                ((baseline / candidate - 1) * 100, "a percentage: return the ratio (2.0 for "
                 "twice as fast), not how many percent faster."),
                (baseline / candidate * 100, "a percentage: return the ratio itself, not x100."),
                (baseline - candidate, "a difference of times; speedup is their ratio."),
            ],
            default_hint="speedup = baseline_ms / candidate_ms.",
        )


def check_amdahl(learner: Learner, rng: random.Random) -> None:
    cases = [(0.1, 2.0), (0.0, 4.0), (1.0, 4.0)]
    cases += [(round(rng.uniform(0.05, 0.95), 3), round(rng.uniform(1.5, 30), 2)) for _ in range(3)]
    for f, s in cases:
        got = learner.number("amdahl_speedup", f, s)
        expected = 1 / ((1 - f) + f / s)
        mistakes = [
            ((1 - f) + f / s, "that is the new time as a fraction of the old; the speedup is "
             "its reciprocal."),
            (1 / ((1 - f / 100) + f / 100 / s), "fraction is already a fraction (0.1 means "
             "10 %): do not divide it by 100."),
            (1 / ((1 - f) + f * s), "the part that gets faster takes fraction / local_speedup "
             "of the old time, not fraction * local_speedup."),
            (1 / (f + (1 - f) / s), "fraction is the part that gets faster; the other "
             "(1 - fraction) runs as before."),
            ((1 - f) + f * s, "Amdahl adds times, not speedups: new time = (1 - f) + f / s, "
             "speedup = 1 / new time."),
        ]
        if f not in (0.0, 1.0):
            mistakes.append((s, "the local speedup is not the overall one: the untouched "
                             "(1 - fraction) of the time limits what the whole program gains."))
        expect_close(
            got, expected, call=call_text("amdahl_speedup", (f, s), {}), unit="x",
            worked=1 / 0.95, mistakes=mistakes,
            default_hint="overall speedup = 1 / ((1 - fraction) + fraction / local_speedup).",
        )


def check_logical_gbps(learner: Learner, rng: random.Random) -> None:
    cases = [(12_000_000, 2.0)]
    cases += [(rng.randint(10**5, 10**11), random_ms(rng)) for _ in range(3)]
    for num_bytes, ms in cases:
        got = learner.number("logical_gbps", num_bytes, ms)
        expected = num_bytes / (ms * 1e6)
        expect_close(
            got, expected, call=call_text("logical_gbps", (num_bytes, ms), {}), unit=" GB/s",
            worked=6.0,
            mistakes=[
                *unit_mistakes(
                    expected, "GB/s = bytes / (ms * 1e-3 s) / 1e9 = bytes / (ms * 1e6)."
                ),
                (expected * GB / GIB, "that is GiB/s (2^30 bytes); the course, like GPU "
                 "datasheets, reports GB/s (10^9 bytes)."),
                (expected * 8, "that is gigabits per second; bandwidth here is in bytes."),
            ],
            default_hint="GB/s = bytes / (ms * 1e6).",
        )


def check_tflops(learner: Learner, rng: random.Random) -> None:
    worked_flops = 2 * 4096**3
    cases = [(worked_flops, 1.0)] + [(rng.randint(10**6, 10**15), random_ms(rng)) for _ in range(3)]
    for flop_count, ms in cases:
        got = learner.number("tflops", flop_count, ms)
        expected = flop_count / (ms * 1e9)
        expect_close(
            got, expected, call=call_text("tflops", (flop_count, ms), {}), unit=" TFLOP/s",
            worked=worked_flops / 1e9,
            mistakes=unit_mistakes(
                expected, "TFLOP/s = FLOPs / (ms * 1e-3 s) / 1e12 = FLOPs / (ms * 1e9)."
            ),
            default_hint="TFLOP/s = FLOPs / (ms * 1e9).",
        )
    cases = [("matmul", (4096, 4096, 4096))]
    cases += [(op, random_shape(rng, op)) for op in ("add", "matmul", "matmul_train")]
    for op, shape in cases:
        got = learner.number("flops", op, shape)
        expected = registry_flops(op, shape)
        product = math.prod(shape)
        expect_close(
            got, expected, call=call_text("flops", (op, shape), {}), unit=" FLOPs",
            worked=2 * 4096**3 if op != "matmul" or shape != (4096, 4096, 4096) else None,
            mistakes={
                "add": [(2 * product, "add does one FLOP per output element.")],
                "matmul": [(product, "a multiply-add is two FLOPs: 2 * M * N * K.")],
                "matmul_train": [
                    (2 * product, "that is the forward GEMM alone; training adds the backward's "
                     "two GEMMs (dA = dC B^T, dB = A^T dC), each as large."),
                    (4 * product, "three GEMMs in all: the forward and the backward's two."),
                    (3 * product, "a multiply-add is two FLOPs: three GEMMs of 2 * M * N * K."),
                ],
            }[op],
            default_hint=f"count {op} as the docstring says; shape is {shape_convention(op)}.",
            show=count_text,
        )


_BYTES_HINTS = {
    "add": "add reads x and y and writes the output: three M x N tensors.",
    "softmax": "softmax reads x once and writes y once: two M x N tensors.",
    "rmsnorm": "residual RMSNorm reads x and the residual, writes y (three M x N tensors), "
    "and reads the weight vector (N values) once.",
    "matmul": "GEMM reads A (M x K) and B (K x N) once and writes C (M x N) once.",
    "softmax_train": "five M x N passes: forward reads x and writes y; backward reads y and "
    "dy and writes dx.",
    "rmsnorm_train": "seven M x N passes (forward: x, residual, y; backward: x and residual "
    "again to recompute h, dy, dx) plus three weight-sized vectors (w forward, w backward, dw).",
    "matmul_train": "three GEMMs (forward C = AB; backward dA = dC B^T and dB = A^T dC), each "
    "moving as much as the forward.",
}


def _byte_mistakes(op: str, shape: tuple[int, ...], e: int) -> list[tuple[float, str]]:
    """What the usual mistakes give for ``op`` at ``shape``, in elements times ``e``."""
    once = "Logical bytes count each tensor once per pass, however often a kernel touches it."
    if op in ("matmul", "matmul_train"):
        m, n, k = shape
        forward = m * k + k * n + m * n
        table = {
            "matmul": [
                (m * k + k * n, "C (M x N) is written: count it too."),
                (forward + m * n, "C is only written, not read: count it once."),
                (2 * m * n * k, f"that is the FLOP count; bytes count each matrix once. {once}"),
            ],
            "matmul_train": [
                (forward, "that is the forward GEMM alone; the backward's two GEMMs move as much "
                 "again each."),
                (2 * forward, "three GEMMs in all: the forward and the backward's dA and dB."),
            ],
        }[op]
    else:
        m, n = shape
        mn = m * n
        table = {
            "add": [
                (2 * mn, "the output is written: count its write too."),
                (4 * mn, "three tensors, each once: was the output counted twice?"),
            ],
            "softmax": [
                (mn, "count the write of y as well as the read of x."),
                (3 * mn, f"x is read once and y written once. {once}"),
                (4 * mn, "y is written once: was it counted twice?"),
            ],
            "rmsnorm": [
                (3 * mn, "the weight vector (N values) is read too, once."),
                (4 * mn, "the weight is read once in all (N values), not once per row."),
                (4 * mn + n, "this RMSNorm writes only y: the sum x + residual is not stored."),
                (2 * mn + n, "the residual is an input too: read x and the residual."),
            ],
            "softmax_train": [
                (2 * mn, "that is the forward alone; the backward reads y and dy and writes dx."),
                (4 * mn, "the backward reads y and dy and writes dx: three passes, plus two."),
                (6 * mn, f"five passes: the backward needs y, not x. {once}"),
            ],
            "rmsnorm_train": [
                (3 * mn + n, "that is the forward alone; add the backward's passes."),
                (7 * mn, "add the three weight-sized vectors: w forward, w backward, dw."),
                (7 * mn + n, "three weight-sized vectors: w read forward, w read backward, dw "
                 "written."),
                (7 * mn + 2 * n, "three weight-sized vectors: dw is written too."),
                (10 * mn, "dw is one vector of N values, not one per row."),
            ],
        }[op]
    return [(elements * e, hint) for elements, hint in table]


def _check_bytes(learner: Learner, op: str, shape: tuple[int, ...], e: int, worked=None) -> None:
    got = learner.number("logical_bytes", op, shape, e)
    expected = registry_bytes(op, shape, e)
    mistakes = [(expected / e, "that counts elements, not bytes: multiply by element_size.")]
    expect_close(
        got, expected, call=call_text("logical_bytes", (op, shape, e), {}), unit=" bytes",
        worked=worked, mistakes=mistakes + _byte_mistakes(op, shape, e),
        default_hint=f"{_BYTES_HINTS[op]} Shape is {shape_convention(op)}; multiply elements by "
        "element_size.",
        show=count_text,
    )


def check_logical_bytes(learner: Learner, rng: random.Random) -> None:
    worked_add = 3 * 1024 * 1024 * 4
    _check_bytes(learner, "add", (1024, 1024), 4)
    _check_bytes(learner, "softmax", (4096, 4096), 4)
    for op in taught_ops(training=False):
        for e in (2, 4):
            _check_bytes(learner, op, random_shape(rng, op), e, worked=worked_add)


def check_training_bytes(learner: Learner, rng: random.Random) -> None:
    for op in taught_ops(training=True):
        for e in (2, 4):
            _check_bytes(learner, op, random_shape(rng, op), e)


def check_fits_in_l2(learner: Learner, rng: random.Random) -> None:
    cases = [
        ("softmax", (1024, 1024), 4, L2_EXAMPLE_BYTES),  # 8 MiB: fits
        ("softmax", (16384, 4096), 2, L2_EXAMPLE_BYTES),  # 256 MiB: does not
    ]
    for op in taught_ops(training=False):
        shape, e = random_shape(rng, op), rng.choice((2, 4))
        footprint = registry_bytes(op, shape, e)
        larger = footprint + rng.randint(1, footprint)
        cases += [(op, shape, e, l2) for l2 in (footprint, footprint - 1, larger, footprint // 3)]
    rng.shuffle(cases[2:])
    for op, shape, e, l2 in cases:
        got = learner.call("fits_in_l2", op, shape, e, l2)
        footprint = registry_bytes(op, shape, e)
        expected = footprint <= l2
        call = call_text("fits_in_l2", (op, shape, e, l2), {})
        if type(got).__name__ not in ("bool", "bool_"):
            shown = f"{got!r} ({type(got).__name__})"
            raise failure(call, expected, shown, "return True or False.")
        if bool(got) == expected:
            continue
        if footprint == l2:
            hint = "the inputs and output take exactly l2_bytes: that fits (compare with <=)."
        else:
            hint = (
                f"the inputs and output of {op} {shape} take {footprint:,} bytes together "
                f"({_BYTES_HINTS[op]}), against an L2 of {l2:,} bytes."
            )
        raise failure(call, expected, got, hint)
