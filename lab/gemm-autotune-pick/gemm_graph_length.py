"""Does the length of the timed graph decide the GEMM comparison? (GPU only, ~90 s)

    python3 lab/gemm-autotune-pick/gemm_graph_length.py --output results/h200/gemm-graph-length.json

kernel-bench times a GEMM as one replay of a CUDA graph of 30 calls (``GRAPH_INVOCATIONS``);
the companion scripts (``_gpu_timing.graph_ms``, Triton's ``do_bench_cudagraph``) capture as
many calls as fill 10 ms. At 16384 x 1024 x 1024 the two read ``torch.mm`` at 52.5 and
58-60 us, and the reference against it at 0.96x and about 1.00x. At ~650 TFLOP/s the H200
runs at its power limit, so a longer stretch of back-to-back GEMMs may run at lower clocks.

This script times the reference ``matmul`` and ``torch.mm`` at the three GEMM target shapes,
each as graphs of two lengths (kernel-bench's 30 calls and 10 ms of calls), all
interleaved in shuffled rounds, one replay a sample, and reads the SM clock and the board's
power through NVML right after each replay. Per call: the replay's time over its calls.
Next to them, the reference with each of its candidate tilings pinned (the autotuner's cache
entry for the case set to that tiling while the graph is captured), and the autotuner's own
pick with the timings it picked by: its pick is made once a process, from a short timing.
Every output is checked against the float64 oracle before it is timed.
"""

from __future__ import annotations

import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))  # the shared helpers

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
from _records import OneLineParser, positive_int  # noqa: E402

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402
from learning.bench.config import GRAPH_INVOCATIONS  # noqa: E402
from reference.kernels import matmul as gemm  # noqa: E402

CASES = (((4096, 4096, 4096), torch.float16), ((16384, 1024, 1024), torch.float16),
         ((8192, 8192, 8192), torch.bfloat16))  # fmt: skip
LENGTHS_MS = (10,)  # graphs filled with this much GEMM time, besides kernel-bench's 30 calls


def capture(call, calls: int) -> torch.cuda.CUDAGraph:
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            call()
    torch.cuda.synchronize()
    return graph


def replay_us(graph: torch.cuda.CUDAGraph, calls: int) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / calls


def nvml_reader():
    """A function giving (SM MHz, board watts) now, or (None, None) without NVML."""
    try:
        from learning.bench.machine import nvml_handle

        pynvml, handle = nvml_handle()
    except Exception:
        return lambda: (None, None)

    def read():
        clock = pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
        return clock, pynvml.nvmlDeviceGetPowerUsage(handle) / 1e3

    return read


def time_case(shape, dtype, rounds: int, read_nvml) -> list[dict]:
    spec = ops.get("matmul")
    inputs = spec.make_inputs(shape, dtype, 0, "cuda")
    a, b = inputs["a"], inputs["b"]
    torch_mm = spec.baselines["torch"]  # torch.mm, as kernel-bench calls it
    calls = {"reference": lambda: gemm.matmul(a, b), "torch.mm": lambda: torch_mm(a, b)}
    tuner = gemm._matmul_persistent_kernel
    before = set(tuner.cache)
    for label, call in calls.items():
        if why := timing.oracle_check(spec, (call(),), inputs, dtype):
            raise SystemExit(f"gemm_graph_length.py: {label} fails the oracle: {why}")
    torch.cuda.synchronize()
    (tuning_key,) = set(tuner.cache) - before  # the persistent kernel's key for this case
    picked = tuner.cache[tuning_key]
    tuned = {_config_name(c): t[0] if isinstance(t, list) else t
             for c, t in tuner.configs_timings.items()}  # fmt: skip
    # Each candidate tiling pinned: the graph captures the launch the tuner's cache names.
    for config in tuner.configs:
        def pinned(config=config, tuning_key=tuning_key):
            tuner.cache[tuning_key] = config
            try:
                return gemm.matmul(a, b)
            finally:
                tuner.cache[tuning_key] = picked

        calls[_config_name(config)] = pinned
        if why := timing.oracle_check(spec, (pinned(),), inputs, dtype):
            raise SystemExit(f"gemm_graph_length.py: {_config_name(config)} fails: {why}")
    torch.cuda.synchronize()
    estimate_us = min(replay_us(capture(call, 5), 5) for call in calls.values())
    lengths = {"30 calls": GRAPH_INVOCATIONS}
    lengths |= {f"{ms} ms": max(1, round(ms * 1e3 / estimate_us)) for ms in LENGTHS_MS}
    graphs = {(label, length): capture(call, n)
              for label, call in calls.items() for length, n in lengths.items()}  # fmt: skip
    for graph in graphs.values():
        graph.replay()  # the first replay uploads the graph
    torch.cuda.synchronize()
    samples = {key: [] for key in graphs}
    order, shuffle = list(graphs), random.Random(0)
    for _ in range(rounds):
        shuffle.shuffle(order)
        for key in order:
            us = replay_us(graphs[key], lengths[key[1]])
            samples[key].append((us, *read_nvml()))
    flops = 2 * shape[0] * shape[1] * shape[2]
    rows = []
    for (label, length), values in samples.items():
        us = statistics.median(v[0] for v in values)
        clocks = [v[1] for v in values if v[1] is not None]
        watts = [v[2] for v in values if v[2] is not None]
        rows.append({
            "shape": "x".join(map(str, shape)), "dtype": ops.dtype_name(dtype),
            "graph": length, "calls": lengths[length], "candidate": label, "us": us,
            "tflops": flops / (us * 1e-6) / 1e12, "samples_us": [v[0] for v in values],
            "sm_mhz": statistics.median(clocks) if clocks else None,
            "watts": statistics.median(watts) if watts else None,
            "autotuner_pick": _config_name(picked), "autotuner_ms": tuned,
        })  # fmt: skip
    return rows


def _config_name(config) -> str:
    k = config.kwargs
    sub = " sub" if k.get("EPILOGUE_SUBTILE") else ""
    return (f"{k['BLOCK_M']}x{k['BLOCK_N']}x{k['BLOCK_K']} w{config.num_warps} "
            f"s{config.num_stages}{sub}")  # fmt: skip


def print_table(rows: list[dict]) -> None:
    """Per case and graph length: every candidate's us a call and torch.mm's time over it;
    then, per case, the tiling the autotuner picked and its own timings (ms)."""
    by_case: dict[tuple, list[dict]] = {}
    for row in rows:
        by_case.setdefault((row["shape"], row["dtype"], row["graph"], row["calls"]), []).append(row)
    for (shape, dtype, graph, calls), group in by_case.items():
        mm = next(r for r in group if r["candidate"] == "torch.mm")
        cells = "  ".join(f"{r['candidate']} {r['us']:.1f} ({mm['us'] / r['us']:.3f})"
                          for r in group)  # fmt: skip
        print(f"{shape:>16s} {dtype:8s} {graph:>8s} {calls:5d}  {mm['sm_mhz'] or 0:.0f} MHz "
              f"{mm['watts'] or 0:.0f} W  {cells}")  # fmt: skip
    for row in rows:
        if row["candidate"] == "reference" and row["graph"] == "30 calls":
            tuned = ", ".join(f"{name} {ms:.4f}" for name, ms in row["autotuner_ms"].items())
            print(f"{row['shape']:>16s} autotuner picked {row['autotuner_pick']} ({tuned})")


def main(argv=None) -> int:
    parser = OneLineParser(prog="gemm_graph_length", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive_int, default=9,
                        help="interleaved rounds, one replay of every graph each (default 9)")
    parser.add_argument("--output", help="write the rows as JSON here")
    args = parser.parse_args(argv)
    timing.require_gpu("gemm_graph_length.py")
    ops.numerics_policy()
    timing.warm_gpu()
    read_nvml = nvml_reader()
    rows = []
    for shape, dtype in CASES:
        rows += time_case(shape, dtype, args.rounds, read_nvml)
    print_table(rows)
    timing.write_json(args.output, {"environment": timing.environment(), "rows": rows},
                      script=__file__, argv=argv)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
