"""Timing helpers the row-kernel tuning and sweep scripts share (GPU only).

One habit for every script: refuse to run without a GPU (exit 2, one line), warm the GPU with
a short GEMM burst so the clocks are up before the first timed kernel, time the device with
CUDA-graph replay (a graph that holds about 10 ms of calls; one candidate alone: the median
of 10 replays, ``graph_ms``; candidates compared: every graph captured first, then replays
in shuffled rounds, ``interleaved_graph_ms``), and oracle-check a candidate before it is
timed. The host clock is used only by the wrapper-overhead script,
which measures the host. ``--output`` is written once the measurement has finished, as a script
record (``write_json``; see scripts/_records.py).
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import learning  # noqa: E402,F401  (selects the Triton backend before triton is imported)

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402
from learning.correctness import compare_all, output_labels  # noqa: E402
from learning.runtime import backend  # noqa: E402

GRAPH_REP_MS = 10  # graph-replay time per measurement; 10 replays, the median is reported


def require_gpu(script: str) -> None:
    """Exit 2 with one line when there is no CUDA GPU: these scripts measure nothing on a CPU."""
    if backend() != "cuda" or not torch.cuda.is_available():
        print(f"{script}: needs a CUDA GPU (the interpreter times nothing); exiting", flush=True)
        raise SystemExit(2)


def warm_gpu(milliseconds: float = 200.0) -> float:
    """Run fp16 GEMMs for about ``milliseconds`` so the SM and memory clocks are up; the time."""
    a = torch.randn((4096, 4096), device="cuda", dtype=torch.float16)
    start = time.perf_counter()
    while (time.perf_counter() - start) * 1e3 < milliseconds:
        for _ in range(8):
            torch.mm(a, a)
        torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e3


def graph_ms(call, rep_ms: int = GRAPH_REP_MS) -> float:
    """Median milliseconds of one ``call()`` under CUDA-graph replay (warm L2 for small inputs)."""
    import triton.testing

    return float(triton.testing.do_bench_cudagraph(call, rep=rep_ms, return_mode="median"))


def interleaved_graph_ms(
    calls: dict[str, Callable], rounds: int = 5, seed: int = 0, rep_ms: int = GRAPH_REP_MS
) -> dict[str, float]:
    """Every call's median milliseconds under CUDA-graph replay, timed in ``rounds`` rounds of
    a shuffled order (``interleaved_graph_samples``).

    Timed one after another, the first candidate meets a cool GPU and the one after a long
    GEMM a hot, power-limited one: on the H200, cuBLAS at 8192^3 bf16 measured 1.55 ms right
    after another GEMM and 1.48 ms after a compile's idle seconds. Interleaving spreads that
    drift over every candidate alike (kernel-bench does the same with its shuffled visits).
    """
    samples = interleaved_graph_samples(calls, rounds, seed, rep_ms)
    return {label: statistics.median(values) for label, values in samples.items()}


REPLAYS_PER_ROUND = 3  # back-to-back timed replays of a candidate's graph in each round


def captured_graph(call: Callable, rep_ms: float = GRAPH_REP_MS) -> tuple:
    """``(graph, calls)``: a CUDA graph of as many ``call()``s as take about ``rep_ms``."""
    call()  # compiles and autotunes outside the graph
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        call()
    end.record()
    end.synchronize()
    estimate_ms = start.elapsed_time(end) / 5
    calls = max(1, int(rep_ms / estimate_ms)) if estimate_ms > 0 else 1000
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            call()
    torch.cuda.synchronize()
    return graph, calls


def replay_ms(graph: torch.cuda.CUDAGraph, calls: int) -> float:
    """Milliseconds a call over one replay of ``graph`` (``calls`` calls), by CUDA events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / calls


def interleaved_graph_samples(
    calls: dict[str, Callable], rounds: int = 5, seed: int = 0, rep_ms: int = GRAPH_REP_MS
) -> dict[str, list[float]]:
    """What ``interleaved_graph_ms`` takes the medians of: ``rounds x REPLAYS_PER_ROUND``
    samples a call, each the milliseconds a call over one replay of its graph.

    Every graph is captured (and replayed once, untimed) before anything is timed, as
    kernel-bench prepares its cases. An earlier version timed each sample with Triton's
    ``do_bench_cudagraph``, which captures a new graph for every sample: between two
    candidates the GPU idled while the host captured, for a time that depended on the
    candidate, and an A/A pair (one GEMM training step timed under two names) read up to 7.7%
    apart, following the shuffled order (``results/h200/gemm-weight-grad-seed*.log``).
    """
    graphs = {label: captured_graph(call, rep_ms) for label, call in calls.items()}
    for graph, count in graphs.values():
        replay_ms(graph, count)
    order = list(calls)
    shuffle = random.Random(seed)
    samples: dict[str, list[float]] = {label: [] for label in order}
    for _ in range(rounds):
        shuffle.shuffle(order)
        for label in order:
            samples[label] += [replay_ms(*graphs[label]) for _ in range(REPLAYS_PER_ROUND)]
    return samples


def cold_ms(call, rep_ms: int = 40) -> float:
    """Median milliseconds of one ``call()`` with L2 flushed before each (events, no graph)."""
    import triton.testing

    return float(triton.testing.do_bench(call, warmup=5, rep=rep_ms, return_mode="median"))


def host_us_per_call(call, calls: int = 2000, repeats: int = 5) -> float:
    """Median host microseconds per ``call()``: many calls, a sync, a host clock; no graph."""
    for _ in range(50):
        call()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        elapsed = time.perf_counter() - start
        torch.cuda.synchronize()
        samples.append(elapsed / calls * 1e6)
    return sorted(samples)[len(samples) // 2]


def interleaved_host_us(
    calls: dict[str, Callable], calls_per_sample: int = 2000, rounds: int = 7, seed: int = 0
) -> dict[str, float]:
    """``host_us_per_call`` of every call, sampled in ``rounds`` rounds of a shuffled order.

    The H200 machine's host clock drifts: the same ``torch.softmax`` measured 5.9 and 9.0 us
    per call in two runs minutes apart. Sampled in turns, every candidate meets the same drift.
    """
    for call in calls.values():
        for _ in range(50):
            call()
    torch.cuda.synchronize()
    order = list(calls)
    shuffle = random.Random(seed)
    samples: dict[str, list[float]] = {label: [] for label in order}
    for _ in range(rounds):
        shuffle.shuffle(order)
        for label in order:
            call = calls[label]
            start = time.perf_counter()
            for _ in range(calls_per_sample):
                call()
            elapsed = time.perf_counter() - start
            torch.cuda.synchronize()
            samples[label].append(elapsed / calls_per_sample * 1e6)
    return {label: statistics.median(values) for label, values in samples.items()}


def paired_host_ratios(
    baseline: Callable, candidate: Callable, calls_per_sample: int = 2000, pairs: int = 41,
    seed: int = 0,
) -> list[float]:
    """``candidate``'s host time per call over ``baseline``'s, one ratio per pair of samples.

    Each pair times the two back to back, in an order drawn afresh for every pair, so the
    host clock's drift cancels within the pair (about 30 ms at 2,000 calls of ~7 us). Shuffled
    rounds of a dozen candidates spread that drift over every row instead: in one such record
    the reference ``softmax_fwd``, which does strictly more than ``softmax``, read 9% less.
    """
    calls = (baseline, candidate)
    for call in calls:
        for _ in range(50):
            call()
    torch.cuda.synchronize()
    order = random.Random(seed)
    ratios = []
    for _ in range(pairs):
        elapsed = [0.0, 0.0]
        for which in (0, 1) if order.random() < 0.5 else (1, 0):
            call = calls[which]
            start = time.perf_counter()
            for _ in range(calls_per_sample):
                call()
            elapsed[which] = time.perf_counter() - start
            torch.cuda.synchronize()
        ratios.append(elapsed[1] / elapsed[0])
    return ratios


def fresh_compile(fn):
    """A new ``torch.compile(fn, dynamic=False)``: each shape gets its own specialized graph."""
    torch._dynamo.reset()
    return torch.compile(fn, dynamic=False)


def oracle_check(spec: ops.OpSpec, outputs, inputs, dtype) -> str:
    """"" if ``outputs`` (a tuple, as ``spec.call`` returns) match the float64 oracle, else why."""
    verdicts = compare_all(
        tuple(outputs), spec.expected(inputs), spec.tolerances[dtype], dtype=dtype,
        labels=output_labels(spec),
    )  # fmt: skip
    return "; ".join(v.reason for v in verdicts if not v.passed)


def terabytes_per_second(logical_bytes: int, ms: float | None) -> float | None:
    return logical_bytes / (ms * 1e-3) / 1e12 if ms else None


def environment() -> dict:
    import triton

    props = torch.cuda.get_device_properties(0)
    return {
        "device": props.name, "sm_count": props.multi_processor_count,
        "torch": torch.__version__, "triton": triton.__version__,
        "python": sys.version.split()[0],
    }  # fmt: skip


def write_json(path: str | None, payload: dict, script: str, argv=None) -> None:
    """Write ``payload`` to ``path`` (if given) as a script record of ``script``: the caller
    passes its ``__file__`` and, once the measurement has finished, its whole output."""
    if not path:
        return
    from _records import write_output

    write_output(path, script, payload, argv=argv)


def fmt(value, spec: str = ".4f") -> str:
    return "-" if value is None else format(value, spec)
