"""The Hopper GEMMs, each alone, from a rested GPU to its power limit: rate, SM clock and
power over time (GPU only; ~2 min).

    python3 scripts/gemm_regimes.py --output results/h200/gemm-regimes.json
    python3 scripts/gemm_regimes.py --profile cooperative --shape 16384 1024 1024  # under ncu

kernel-bench's samples (30-call graphs with idle host gaps between them) meet a rested GPU;
the companion scripts' interleaved 10 ms graphs meet one at its power limit, and, interleaved,
every variant shares one clock, which the mix of them sets. At 16384 x 1024 x 1024 fp16 the
ping-pong kernel (``reference/kernels/pingpong.py``) read 3-5% behind ``torch.mm`` in the
first and 4-7% ahead in the second (``results/NOTES.md``, "Two regimes"). This script times
each variant *alone*, following it from one regime into the other: for each shape, in
``--rounds`` rounds of a shuffled order, each variant waits ``--rest-s`` seconds idle, then
replays a captured 30-call graph back to back for ``--seconds``; every replay is timed with
CUDA events, and a thread samples NVML (the SM clock, the power draw, the clock-event
reasons) about every millisecond.

The variants: the 16-bit GEMM as it stands (``matmul``, which on Hopper runs the cooperative
kernel, ``reference/kernels/cooperative.py``), the ping-pong kernel it replaced, and
``torch.mm``; each is checked against the float64 oracle first.

Per time window after the start (0-20 ms, 20-100, 100-300, 300 to the end), each variant's
median rate (TFLOP/s), SM clock (MHz) and power (W), the share of samples the driver was
capping the clock for power, and the rate per gigahertz of clock: the work a cycle does. A
kernel that does less work a cycle trails while the clock is free; one that draws more power
for the same work trails once the power limit sets the clock. NVML's power reading lags (it
reads the idle draw through the first 100 ms); its clock does not.

``--profile VARIANT --shape M N K`` instead calls one variant three times, then once between
``cudaProfilerStart`` and ``cudaProfilerStop``, for ``ncu --profile-from-start off``.
``--group-m G [G ...]`` times, instead of the three kernels, the cooperative kernel with each
``GROUP_M`` (its tile rows per super-row of the grouped order; the kernel's own value is
``cooperative.GROUP_M``) and ``torch.mm``, the same way.
"""

from __future__ import annotations

import random
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
from _records import OneLineParser, positive_int, positive_seconds  # noqa: E402

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402
from reference.kernels import cooperative, pingpong  # noqa: E402

VARIANTS = ("cooperative", "ping-pong", "torch.mm")  # the first: the GEMM as it stands

SHAPES = ((16384, 1024, 1024, torch.float16), (4096, 4096, 4096, torch.float16),
          (8192, 8192, 8192, torch.bfloat16))  # fmt: skip
CALLS_PER_GRAPH = 30
WINDOWS_MS = (0, 20, 100, 300)  # window edges after the start; the last window ends with the run
POWER_CAP = 0x4  # nvmlClocksEventReasonSwPowerCap: the driver holds the clock for power
INSTANT_POWER_FIELD = 186  # NVML_FI_DEV_POWER_INSTANT (mW); the averaged draw where it is absent


class Sampler:
    """NVML in a thread: (host seconds, SM MHz, watts, clock-event reasons) about every ms."""

    def __init__(self):
        from learning.bench.machine import nvml_handle

        self.nvml, self.handle = nvml_handle()
        self.samples: list[tuple[float, int, float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _power_w(self) -> float:
        nvml = self.nvml
        try:
            value = nvml.nvmlDeviceGetFieldValues(self.handle, [INSTANT_POWER_FIELD])[0]
            if value.nvmlReturn == 0:
                return value.value.uiVal / 1e3
        except Exception:
            pass
        return nvml.nvmlDeviceGetPowerUsage(self.handle) / 1e3

    def _run(self) -> None:
        nvml = self.nvml
        reasons = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            nvml.nvmlDeviceGetCurrentClocksThrottleReasons  # fmt: skip
        while not self._stop.is_set():
            now = time.perf_counter()
            clock = nvml.nvmlDeviceGetClockInfo(self.handle, nvml.NVML_CLOCK_SM)
            self.samples.append((now, clock, self._power_w(), reasons(self.handle)))
            time.sleep(0.001)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def back_to_back(graph: torch.cuda.CUDAGraph, seconds: float, flops_per_replay: float):
    """Replay ``graph`` back to back for ``seconds`` (a few replays queued ahead) under a
    sampler: [(ms since the first replay started, TFLOP/s of that replay)], the NVML samples
    as (ms since that start, MHz, W, reasons)."""
    events = []
    with Sampler() as sampler:
        torch.cuda.synchronize()
        start_host = time.perf_counter()
        while time.perf_counter() - start_host < seconds:
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            graph.replay()
            end.record()
            events.append((begin, end))
            if len(events) > 4:
                events[-5][1].synchronize()  # keep a few queued, and let the sampler run
        torch.cuda.synchronize()
    first = events[0][0]
    rates = [(first.elapsed_time(b), flops_per_replay / (b.elapsed_time(e) * 1e-3) / 1e12)
             for b, e in events]  # fmt: skip
    # the first replay starts about when the host queued it: the queue was empty
    nvml = [((t - start_host) * 1e3, mhz, watts, why) for t, mhz, watts, why in sampler.samples]
    return rates, nvml


def summarize(rates, nvml, seconds: float) -> list[dict]:
    """Per window of time after the start (``WINDOWS_MS``, then to the end of the run): the
    median rate, SM clock and power, the share of samples capped for power, rate per GHz."""
    rows = []
    edges = [edge for edge in WINDOWS_MS if edge < seconds * 1e3] + [seconds * 1e3]
    for low, high in zip(edges, edges[1:], strict=False):
        window = [r for t, r in rates if low <= t < high]
        samples = [s for s in nvml if low <= s[0] < high]
        if not window or not samples:
            continue
        rate = statistics.median(window)
        mhz = statistics.median(s[1] for s in samples)
        rows.append({
            "window_ms": [low, high], "replays": len(window), "tflops": rate, "sm_mhz": mhz,
            "watts": statistics.median(s[2] for s in samples),
            "power_capped": sum(bool(s[3] & POWER_CAP) for s in samples) / len(samples),
            "tflops_per_ghz": rate / (mhz / 1e3) if mhz else None,
        })  # fmt: skip
    return rows


def measure(spec, variants: dict, shapes, rounds: int, seconds: float, rest_s: float,
            shuffle: random.Random) -> list[dict]:
    """Every variant at every shape, oracle-checked, then alone after ``rest_s`` idle for
    ``seconds`` back to back, in ``rounds`` rounds of a shuffled order: ``summarize``'s rows."""
    order, rows = list(variants), []
    for m, n, k, dtype in shapes:
        shape = (m, n, k)
        inputs = spec.inputs(shape, dtype, 7, device="cuda")
        if not pingpong.ready(*inputs.values()):
            raise SystemExit("the ping-pong kernel needs a Hopper GPU (sm_90)")
        graphs = {}
        for variant, fn in variants.items():
            failure = timing.oracle_check(spec, spec.call(fn, inputs), inputs, dtype)
            if failure:
                raise SystemExit(f"{variant} at {shape}: {failure}")
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for _ in range(CALLS_PER_GRAPH):
                    spec.call(fn, inputs)
            graphs[variant] = graph
        for round_ in range(rounds):
            shuffle.shuffle(order)
            for variant in order:
                time.sleep(rest_s)
                rates, nvml = back_to_back(graphs[variant], seconds,
                                           CALLS_PER_GRAPH * spec.flops(shape))  # fmt: skip
                for row in summarize(rates, nvml, seconds):
                    rows.append({"shape": spec.shape_label(shape), "dtype": ops.dtype_name(dtype),
                                 "variant": variant, "round": round_, **row})  # fmt: skip
        del graphs
    return rows


def print_rows(rows: list[dict]) -> None:
    print(f"{'shape':>16s} {'dtype':9s} {'variant':11s} {'rnd':>3s} {'window ms':>10s} "
          f"{'TFLOP/s':>8s} {'MHz':>5s} {'W':>4s} {'capped':>6s} {'TF/GHz':>7s}")
    for row in rows:
        window = "{}-{}".format(*row["window_ms"])
        print(f"{row['shape']:>16s} {row['dtype']:9s} {row['variant']:11s} {row['round']:3d} "
              f"{window:>10s} {row['tflops']:8.0f} {row['sm_mhz']:5.0f} {row['watts']:4.0f} "
              f"{row['power_capped']:6.2f} {timing.fmt(row['tflops_per_ghz'], '7.1f')}")


def cooperative_with_group(group_m: int):
    """``cooperative.matmul`` with its grouped order's super-rows of ``group_m`` tile rows."""

    def call(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        landed = cooperative.GROUP_M
        cooperative.GROUP_M = group_m
        try:
            return cooperative.matmul(a, b)
        finally:
            cooperative.GROUP_M = landed

    return call


def profile(spec, fn, variant: str, shape: tuple[int, int, int]) -> int:
    inputs = spec.inputs(shape, torch.float16, 7, device="cuda")
    for _ in range(3):
        spec.call(fn, inputs)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    spec.call(fn, inputs)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print(f"profiled {variant} at {spec.shape_label(shape)} float16 (one call)")
    return 0


def main(argv=None) -> int:
    parser = OneLineParser(prog="gemm_regimes", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive_int, default=2,
                        help="rounds of a shuffled order of the variants (default 2)")
    parser.add_argument("--seconds", type=positive_seconds, default=1.5,
                        help="back-to-back replay time per variant and round (default 1.5)")
    parser.add_argument("--rest-s", type=positive_seconds, default=3.0,
                        help="idle seconds before each variant's replays (default 3)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the shuffled order")
    parser.add_argument("--profile", choices=VARIANTS,
                        help="call this variant once inside a profiler range (for ncu), time "
                             "nothing")  # fmt: skip
    parser.add_argument("--shape", type=positive_int, nargs=3, metavar=("M", "N", "K"),
                        help="with --profile: the product's sizes (fp16)")
    parser.add_argument("--group-m", type=positive_int, nargs="+", metavar="G",
                        help="time the cooperative kernel with each GROUP_M (and torch.mm) "
                             "instead of the three kernels")  # fmt: skip
    parser.add_argument("--output", help="write the rows as JSON here")
    args = parser.parse_args(argv)
    if (args.profile is None) != (args.shape is None):
        parser.error("--profile and --shape go together")
    if args.profile and args.group_m:
        parser.error("--group-m times; --profile profiles: one or the other")
    timing.require_gpu("gemm_regimes.py")
    ops.numerics_policy()
    spec = ops.get("matmul")
    functions = (spec.kernel_function(), pingpong.matmul, spec.baselines["torch"])
    variants = dict(zip(VARIANTS, functions, strict=True))
    if args.profile:
        return profile(spec, variants[args.profile], args.profile, tuple(args.shape))
    if args.group_m:
        variants = {f"cooperative G{g}": cooperative_with_group(g) for g in args.group_m}
        variants["torch.mm"] = spec.baselines["torch"]
    try:
        rows = measure(spec, variants, SHAPES, args.rounds, args.seconds, args.rest_s,
                       random.Random(args.seed))  # fmt: skip
    except SystemExit as stop:
        raise SystemExit(f"gemm_regimes.py: {stop}") from None
    print_rows(rows)
    timing.write_json(args.output, {"environment": timing.environment(), "rows": rows,
                                    "args": {"rounds": args.rounds, "seconds": args.seconds,
                                             "rest_s": args.rest_s, "seed": args.seed,
                                             "group_m": args.group_m}},
                      script=__file__, argv=argv)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
