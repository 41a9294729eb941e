# Your copy of reference/measurement.py,
# made by scripts/make_exercises.py with the solution regions replaced by TODOs.
# This file is yours to edit; `python -m learning.check <exercise>` grades it.
# (Maintainers: edit the reference and rerun the script, never this copy.)
"""Lesson 7: the arithmetic that turns a timing into a claim.

Every function here is plain Python on numbers: no GPU, no torch. A benchmark gives
milliseconds; these functions say what those milliseconds mean (a ratio against a baseline,
logical bandwidth, arithmetic throughput), what a change can buy at most (Amdahl), how to read
a set of samples, how to compare two variants' samples round by round, and how to write the
one sentence a timing needs before anyone may quote it.

Units used everywhere in the course:

* times in **milliseconds** (``ms``), as the benchmark reports them;
* sizes in **bytes**; bandwidth in **GB/s** (10^9 bytes per second, not GiB);
* arithmetic in **FLOPs** (a multiply-add is two); throughput in **TFLOP/s** (10^12 per second).

Shapes follow the op registry (``learning/ops/``): row ops (add, softmax, rmsnorm and their
training steps) take ``(M, N)``; GEMM takes ``(M, N, K)`` with A ``M x K``, B ``K x N`` and
C ``M x N``. Op names are the registry's: ``add``, ``softmax``, ``rmsnorm``, ``matmul``,
``softmax_train``, ``rmsnorm_train``, ``matmul_train``.

``python -m learning.check measurement`` grades this file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple


class Spread(NamedTuple):
    """How a set of timing samples spreads: report all three, never one alone."""

    median_ms: float
    min_ms: float
    max_ms: float


class PairedSpeedup(NamedTuple):
    """A candidate against a baseline round by round: report the three together."""

    speedup: float  # the median over rounds of baseline / candidate (above 1: candidate faster)
    slower: int  # the untied rounds in which the candidate took longer
    rounds: int  # the rounds that were not ties


def format_ms(ms: float) -> str:
    """A time as the result sentence writes it: four significant digits, then ``ms``."""
    return f"{ms:.4g} ms"


# --------------------------------------------------------------------------- ratios


def speedup(baseline_ms: float, candidate_ms: float) -> float:
    """How many times faster the candidate is than the baseline (above 1: faster).

    Example: a baseline of 10 ms and a candidate of 5 ms is a speedup of 2.0.
    """
    # TODO: a ratio of two times: which one goes on top so that faster is above 1?
    raise NotImplementedError(
        "exercises/measurement.py:speedup: a ratio of two times: which one goes on top so that "
        "faster is above 1?"
    )


def amdahl_speedup(fraction: float, local_speedup: float) -> float:
    """The whole program's speedup when a ``fraction`` of its time runs ``local_speedup`` x faster.

    ``fraction`` is a fraction between 0 and 1 (0.1 for ten percent), not a percentage.
    Example: making 10 % of the time twice as fast gives 1 / (0.9 + 0.1 / 2) = 1.053.
    """
    # TODO: the new time is the untouched part plus the sped-up part; speedup is old / new
    raise NotImplementedError(
        "exercises/measurement.py:amdahl_speedup: the new time is the untouched part plus the "
        "sped-up part; speedup is old / new"
    )


# --------------------------------------------------------------------------- rates


def logical_gbps(num_bytes: int, ms: float) -> float:
    """Logical bandwidth in GB/s (10^9 bytes per second) of moving ``num_bytes`` in ``ms``.

    Example: 12,000,000 bytes in 2 ms is 6 GB/s.
    """
    # TODO: convert ms to seconds and bytes to GB; both are powers of ten
    raise NotImplementedError(
        "exercises/measurement.py:logical_gbps: convert ms to seconds and bytes to GB; both are "
        "powers of ten"
    )


def tflops(flop_count: int, ms: float) -> float:
    """Arithmetic throughput in TFLOP/s (10^12 FLOPs per second) of ``flop_count`` FLOPs in ``ms``.

    Example: 2 * 4096**3 FLOPs (one 4096-cubed GEMM) in 1 ms is 137.4 TFLOP/s.
    """
    # TODO: convert ms to seconds and FLOPs to TFLOPs
    raise NotImplementedError(
        "exercises/measurement.py:tflops: convert ms to seconds and FLOPs to TFLOPs"
    )


def flops(op: str, shape: Sequence[int]) -> int:
    """The FLOPs the course counts for one call of ``op`` at ``shape``.

    ``add``: one per output element. ``matmul``: a multiply and an add for each of the
    M x N x K products. ``matmul_train``: the forward GEMM and the two GEMMs of the backward
    pass (dA = dC B^T, dB = A^T dC), each as large as the forward. Other ops raise ValueError:
    the course does not count their FLOPs.
    """
    # TODO: add: M*N; matmul: 2*M*N*K; matmul_train: three GEMMs of the forward's size
    raise NotImplementedError(
        "exercises/measurement.py:flops: add: M*N; matmul: 2*M*N*K; matmul_train: three GEMMs of "
        "the forward's size"
    )


# --------------------------------------------------------------------------- bytes


def logical_bytes(op: str, shape: Sequence[int], element_size: int) -> int:
    """The bytes one call of ``op`` must move at least: each tensor counted once per pass.

    Logical bytes count what the operation has to read and write, not what a given kernel
    happens to move: a softmax that reads its row three times still has one read of the input
    and one write of the output. ``element_size`` is in bytes (2 for fp16/bf16, 4 for fp32).

    Forward ops:

    * ``add``: read x, read y, write the output (three M x N tensors);
    * ``softmax``: read x once, write y once;
    * ``rmsnorm`` (residual RMSNorm): read x and the residual, write y, and read the
      weight vector (N values) once;
    * ``matmul``: read A (M x K) and B (K x N) once, write C (M x N) once.

    Training steps (forward plus backward):

    * ``softmax_train``: five M x N passes (forward: read x, write y; backward: read y,
      read dy, write dx);
    * ``rmsnorm_train``: seven M x N passes plus three weight-sized vectors (read w forward,
      read w backward, write dw);
    * ``matmul_train``: three GEMMs, each moving as much as the forward.

    Any other op name raises ValueError.
    """
    # TODO: count elements per tensor pass, then multiply by element_size
    raise NotImplementedError(
        "exercises/measurement.py:logical_bytes: count elements per tensor pass, then multiply by "
        "element_size"
    )


def fits_in_l2(op: str, shape: Sequence[int], element_size: int, l2_bytes: int) -> bool:
    """Whether a forward op's inputs and output fit in an L2 cache of ``l2_bytes`` together.

    When they fit, a benchmark that calls the op again and again reads its inputs from L2,
    not from DRAM, and reports a bandwidth that DRAM cannot deliver. A forward op reads each
    input and writes its output exactly once, so its footprint is its logical bytes; a case
    whose footprint equals ``l2_bytes`` counts as fitting.
    """
    # TODO: a forward op touches each input and its output once: reuse logical_bytes
    raise NotImplementedError(
        "exercises/measurement.py:fits_in_l2: a forward op touches each input and its output once: "
        "reuse logical_bytes"
    )


# --------------------------------------------------------------------------- reading samples


def summarize(samples_ms: Sequence[float]) -> Spread:
    """Median, minimum and maximum of timing samples, without reordering the caller's list.

    With an even number of samples the median is the mean of the two middle ones.
    An empty list raises ValueError.
    """
    # TODO: sort a copy (sorted(...)); the median of an even count is the mean of the middle two
    raise NotImplementedError(
        "exercises/measurement.py:summarize: sort a copy (sorted(...)); the median of an even count"
        " is the mean of the middle two"
    )


def paired_speedup(
    baseline_samples_ms: Sequence[float], candidate_samples_ms: Sequence[float]
) -> PairedSpeedup:
    """The candidate against the baseline round by round: sample i of each list is round i's.

    * ``speedup``: the median over rounds of ``baseline[i] / candidate[i]`` (above 1: the
      candidate is faster, as for :func:`speedup`); a tie is a ratio of 1 and counts here;
    * ``slower``: the rounds in which the candidate took longer;
    * ``rounds``: the rounds that were not ties (a tie says nothing about which is faster).

    The caller's lists are left as they were. Lists of different lengths, empty lists, or a
    sample that is not positive raise ValueError.

    Why pair: the variants of a round are timed back to back, under the same clocks, so the
    ratio of one round's two samples cancels the drift that round shared. A ratio of two
    medians keeps it: each median may come from a different round.

    Example: baseline ``[2.0, 4.0, 3.0, 1.0, 5.0]`` and candidate ``[1.0, 2.0, 3.0, 1.25, 2.5]``
    give the ratios 2, 2, 1, 0.8, 2, so ``PairedSpeedup(speedup=2.0, slower=1, rounds=4)``:
    round 4 lost, round 3 a tie. The ratio of the medians would be 3.0 / 2.0 = 1.5.
    """
    # TODO: refuse what cannot be paired (ValueError); one ratio per round (zip), their median
    # TODO: with summarize; then count the rounds that are not ties and those the candidate lost
    raise NotImplementedError(
        "exercises/measurement.py:paired_speedup: refuse what cannot be paired (ValueError); one "
        "ratio per round (zip), their median with summarize; then count the rounds that are not "
        "ties and those the candidate lost"
    )


# --------------------------------------------------------------------------- the claim


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
    """The one sentence a timing needs before it may be quoted, exactly in this form::

        On {gpu}, for {case}, {variant} took {median} under {timing_mode}, versus {baseline}
        at {baseline median}. It passed {check}. The result does not establish {not_established}.

    (one line, single spaces) where both medians are written with :func:`format_ms`.
    Example: ``On NVIDIA H200, for softmax 4096x4096 float16, triton took 0.05 ms under CUDA
    graph replay, versus torch eager at 0.1 ms. It passed the float64 oracle check. The result
    does not establish that the kernel is faster at other shapes.``
    """
    # TODO: one f-string; write both medians with format_ms
    raise NotImplementedError(
        "exercises/measurement.py:result_sentence: one f-string; write both medians with format_ms"
    )

