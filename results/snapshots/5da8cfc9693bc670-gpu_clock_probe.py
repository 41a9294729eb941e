"""How much do idle GPU clocks distort a microseconds-long kernel, and how long does a burst last?

    python scripts/gpu_clock_probe.py --output results/h200/clock-probe.json

1. Steady state: a ~2.5 µs kernel (PyTorch softmax, 1024x1024 fp16) is replayed alone, as
   CUDA graphs of 30 calls, for ``--settle-s`` (1 s) after a 1 s GEMM burst; then 100 more
   replays are timed. The kernel's own sustained rate is the reference: the first version
   timed right after the burst, when the burst's heat still slowed the kernel (7.3 µs against
   4.8 µs rested), so every "vs steady" ratio read low.
2. After a pause (default 20 s idle), the same replays are timed back to back from the first
   moment on: the curve shows how long the first calls run slow while the clocks come up.
3. After a 200 ms burst (the benchmark's warm-up), an idle gap of 0 ms ... 5 s, then one
   replay: how long the burst's effect lasts, which is what the re-warm gap is chosen from.

NVML's SM clock is read along the way where available. GPU only: exits 2 on a CPU.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
SCRIPTS = Path(__file__).resolve().parent
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

CALLS_PER_GRAPH = 30
CURVE_BUCKETS_MS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000)
BURST_GAPS_MS = (0, 50, 100, 250, 500, 1000, 2000, 5000)


def _sm_clock():
    try:
        from learning.bench.machine import nvml_handle

        pynvml, handle = nvml_handle()
        return lambda: int(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
    except Exception:
        return lambda: None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pause-s", type=float, default=20.0, help="idle time before the curve")
    parser.add_argument("--curve-s", type=float, default=1.5, help="how long the curve is recorded")
    parser.add_argument(
        "--settle-s", type=float, default=1.0, help="the kernel alone before its steady timing"
    )
    parser.add_argument("--output", type=Path, help="write the figures as JSON")
    args = parser.parse_args(argv)

    import torch

    import learning  # noqa: F401  (selects the backend)

    if not torch.cuda.is_available():
        print("gpu_clock_probe: needs a CUDA GPU; there is none here", file=sys.stderr)
        return 2
    from learning.bench.machine import ClockWarmer, environment

    clock = _sm_clock()
    x = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(5):
            torch.softmax(x, dim=-1)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(CALLS_PER_GRAPH):
            torch.softmax(x, dim=-1)
    torch.cuda.synchronize()

    def timed_replays(count: int) -> list[tuple[torch.cuda.Event, torch.cuda.Event]]:
        pairs = []
        for _ in range(count):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            pairs.append((start, end))
        return pairs

    def per_call_us(pair) -> float:
        return pair[0].elapsed_time(pair[1]) * 1e3 / CALLS_PER_GRAPH

    warmer = ClockWarmer(enabled=True, burst_ms=1000.0)
    warmer.burst()
    settle_until = time.perf_counter() + args.settle_s
    while time.perf_counter() < settle_until:  # the kernel alone, until the burst has passed
        timed_replays(20)
        torch.cuda.synchronize()
    steady_clock = clock()
    pairs = timed_replays(100)
    torch.cuda.synchronize()
    steady = statistics.median(per_call_us(p) for p in pairs)
    print(
        f"steady state: {steady:.2f} us per call after {args.settle_s:.1f} s of this kernel "
        f"alone (SM clock {steady_clock} MHz)"
    )

    print(f"idle for {args.pause_s:.0f} s ...", flush=True)
    time.sleep(args.pause_s)
    idle_clock = clock()
    origin = torch.cuda.Event(enable_timing=True)
    origin.record()
    curve, clocks = [], []
    end = time.perf_counter() + args.curve_s
    while time.perf_counter() < end:
        chunk = timed_replays(20)
        clocks.append(clock())
        torch.cuda.synchronize()
        curve += [(origin.elapsed_time(p[0]), per_call_us(p)) for p in chunk]
    buckets, low = [], 0.0
    for high in (*CURVE_BUCKETS_MS, float("inf")):
        values = [us for t, us in curve if low <= t < high]
        if values:
            buckets.append(
                {
                    "from_ms": low,
                    "to_ms": high if high != float("inf") else None,
                    "replays": len(values),
                    "median_us": statistics.median(values),
                    "vs_steady": statistics.median(values) / steady,
                }
            )
        low = high

    after_burst = []
    short = ClockWarmer(enabled=True)  # the benchmark's 200 ms burst
    for gap_ms in BURST_GAPS_MS:
        short.burst()
        time.sleep(gap_ms / 1e3)
        gap_clock = clock()
        pair = timed_replays(1)[0]
        torch.cuda.synchronize()
        after_burst.append(
            {
                "gap_ms": gap_ms,
                "first_replay_us": per_call_us(pair),
                "vs_steady": per_call_us(pair) / steady,
                "sm_clock_mhz": gap_clock,
            }
        )

    print(
        f"\nafter {args.pause_s:.0f} s idle "
        f"(SM clock then {idle_clock} MHz; steady {steady:.2f} us):"
    )
    print(f"{'since first call':>18}  {'replays':>7}  {'us/call':>8}  {'vs steady':>9}")
    for b in buckets:
        span = f"{b['from_ms']:.0f}-{b['to_ms'] if b['to_ms'] is not None else 'end'} ms"
        print(f"{span:>18}  {b['replays']:>7}  {b['median_us']:>8.2f}  {b['vs_steady']:>8.2f}x")
    print("\nafter a 200 ms GEMM burst, then an idle gap:")
    print(f"{'gap':>8}  {'us/call':>8}  {'vs steady':>9}  {'SM MHz':>6}")
    for row in after_burst:
        print(
            f"{row['gap_ms']:>6} ms  {row['first_replay_us']:>8.2f}  {row['vs_steady']:>8.2f}x  "
            f"{row['sm_clock_mhz'] if row['sm_clock_mhz'] is not None else '-':>6}"
        )

    if args.output:
        from _records import write_output

        write_output(
            args.output,
            __file__,
            {
                "kernel": "torch.softmax 1024x1024 float16, CUDA graph of 30 calls",
                "environment": environment("cuda"),
                "steady_us": steady,
                "steady_method": f"median of 100 replays after {args.settle_s} s of the kernel "
                "alone, following a 1 s GEMM burst",
                "steady_sm_clock_mhz": steady_clock,
                "pause_s": args.pause_s,
                "idle_sm_clock_mhz": idle_clock,
                "curve": [{"t_ms": t, "us_per_call": us} for t, us in curve],
                "curve_sm_clock_mhz": clocks,
                "curve_buckets": buckets,
                "after_burst": after_burst,
            },
            argv=argv,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
