"""The Hopper Gluon GEMMs against the tile-language kernel and torch.mm, interleaved (GPU
only; ~80 s).

    python3 scripts/gemm_pingpong.py --host --output results/h200/gemm-pingpong-landed.json

Times ``reference/kernels/cooperative.py`` (the Gluon kernel the 16-bit GEMM runs on Hopper),
``reference/kernels/pingpong.py`` (the one it replaced), the persistent tile-language kernel
of ``reference/kernels/matmul.py`` that both replaced there (reached by telling
``pingpong.ready`` no), and ``torch.mm``, interleaved under CUDA-graph replay with every graph
captured first, at 16384 x 1024 x 1024 and 4096^3 fp16 and 8192^3 bf16. Every output is
checked against the float64 oracle before it is timed. Interleaved, the variants share one
clock, which the mix of them sets near the power limit: ``gemm_regimes.py`` times each alone.

The ping-pong kernel was first written here, as a probe; ``results/h200/gemm-pingpong.json``
is that probe's run (its snapshot keeps the probe's source), and the kernel moved to
``reference/``. ``--host`` also prints each variant's host time a call at 1024^3
(``_gpu_timing.host_us_per_call``, three runs). An earlier version of the ping-pong kernel
built its descriptors on the device; ``gemm-pingpong-device-descriptors.json`` and
``gemm-pingpong-variants.json`` are its runs (their snapshots keep its source and this
script's, whose ``--variants`` timed it with its integers specialized). ``--host-profile``
takes the host time a call at 1024^3 apart: each kernel's whole call and its steps, sampled
in turns, and the landed kernel's call under ``cProfile``.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
from _records import OneLineParser, positive_int  # noqa: E402

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402
from reference.kernels import cooperative, pingpong  # noqa: E402
from reference.kernels import matmul as gemm  # noqa: E402

SHAPES = ((16384, 1024, 1024), (4096, 4096, 4096), (8192, 8192, 8192))

def tile_language(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``matmul.py``'s persistent kernel, as the 16-bit GEMM ran before the ping-pong one."""
    ready = pingpong.ready
    pingpong.ready = lambda a, b: False
    try:
        return gemm._launch_persistent(a, b)
    finally:
        pingpong.ready = ready


def host_profile() -> dict:
    """Host microseconds a call at 1024^3 fp16: each Hopper kernel's whole call, ``torch.mm``'s,
    and the steps of a call (the output's allocation, three descriptors, the ping-pong
    kernel's ``kernel[grid]`` with its descriptors made), sampled in turns; and the landed
    (cooperative) kernel's call under ``cProfile`` (printed; its top rows returned)."""
    a = torch.randn((1024, 1024), device="cuda", dtype=torch.float16)
    bm, bn, bk = (pingpong.TILE[name] for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
    sms = pingpong._sm_count(a.device)
    c = torch.empty((1024, 1024), dtype=a.dtype, device=a.device)
    descriptors = (pingpong._descriptor(a, (bm, bk)), pingpong._descriptor(a, (bk, bn)),
                   pingpong._descriptor(c, (bm, bn)))  # fmt: skip
    meta = dict(GROUP_M=pingpong.GROUP_M, STAGES=pingpong.STAGES, NUM_SMS=sms,
                A_COLUMN_MAJOR=False, B_COLUMN_MAJOR=False, num_warps=pingpong.NUM_WARPS,
                maxnreg=pingpong.MAXNREG)  # fmt: skip
    kernel = pingpong._matmul_pingpong_kernel
    steps = {
        "cooperative, whole call": lambda: cooperative.matmul(a, a),
        "ping-pong, whole call": lambda: pingpong.matmul(a, a),
        "torch.mm": lambda: torch.mm(a, a),
        "torch.empty": lambda: torch.empty((1024, 1024), dtype=a.dtype, device=a.device),
        "3 descriptors": lambda: (pingpong._descriptor(a, (bm, bk)),
                                  pingpong._descriptor(a, (bk, bn)),
                                  pingpong._descriptor(c, (bm, bn))),
        "ping-pong kernel[grid], descriptors made": lambda: kernel[(64,)](*descriptors, **meta),
    }  # fmt: skip
    times = timing.interleaved_host_us(steps, calls_per_sample=1000, rounds=7)
    direct = cooperative._LAUNCH.direct_launches
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(2000):
        cooperative.matmul(a, a)
    profiler.disable()
    torch.cuda.synchronize()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(25)
    print(text.getvalue())
    return {"us_per_call": times, "profile_top": text.getvalue().splitlines()[:60],
            "direct_launches_of_2000": cooperative._LAUNCH.direct_launches - direct}
def main(argv=None) -> int:
    parser = OneLineParser(prog="gemm_pingpong", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive_int, default=7,
                        help="interleaved timing rounds per shape (default 7)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the shuffled order of the rounds (default 0)")
    parser.add_argument("--output", help="write the rows as JSON here")
    parser.add_argument("--host", action="store_true",
                        help="also print each variant's host time a call at 1024^3")
    parser.add_argument("--host-profile", action="store_true",
                        help="only take the ping-pong kernel's host time apart (no timing)")
    args = parser.parse_args(argv)
    timing.require_gpu("gemm_pingpong.py")
    ops.numerics_policy()
    if args.host_profile:
        steps = host_profile()
        for step, us in steps["us_per_call"].items():
            print(f"host us a call at 1024^3 fp16, {step}: {us:.1f}")
        print(f"direct launches: {steps['direct_launches_of_2000']} of 2000 profiled calls")
        timing.write_json(args.output, {"environment": timing.environment(), "host": steps},
                          script=__file__, argv=argv)  # fmt: skip
        return 0
    timing.warm_gpu()
    spec = ops.get("matmul")
    variants = {"tile lang.": tile_language, "torch.mm": spec.baselines["torch"],
                "ping-pong": pingpong.matmul, "cooperative": cooperative.matmul}  # fmt: skip
    rows, host = [], {}
    for shape in SHAPES:
        dtype = torch.bfloat16 if shape[0] == 8192 else torch.float16
        inputs = spec.inputs(shape, dtype, 7, device="cuda")
        if not pingpong.ready(*inputs.values()):
            raise SystemExit("gemm_pingpong.py: the ping-pong kernel needs a Hopper GPU (sm_90)")
        calls = {}
        for variant, fn in variants.items():
            failure = timing.oracle_check(spec, spec.call(fn, inputs), inputs, dtype)
            if failure:
                raise SystemExit(f"gemm_pingpong.py: {variant} at {shape}: {failure}")
            calls[variant] = lambda fn=fn, x=inputs: spec.call(fn, x)
        medians = timing.interleaved_graph_ms(calls, rounds=args.rounds, seed=args.seed)
        for variant, ms in medians.items():
            rows.append({
                "shape": spec.shape_label(shape), "dtype": ops.dtype_name(dtype),
                "variant": variant, "ms": ms,
                "tflops": spec.flops(shape) / (ms * 1e-3) / 1e12,
                "vs_torch_mm": medians["torch.mm"] / ms,
                "vs_tile_language": medians["tile lang."] / ms,
            })  # fmt: skip
    if args.host:
        a = torch.randn((1024, 1024), device="cuda", dtype=torch.float16)
        for variant, fn in variants.items():
            fn(a, a)
            torch.cuda.synchronize()
            host[variant] = [timing.host_us_per_call(lambda fn=fn: fn(a, a)) for _ in range(3)]
    print(f"{'shape':>16s} {'dtype':9s} {'variant':15s} {'ms':>8s} {'TFLOP/s':>8s} "
          f"{'vs mm':>6s} {'vs tile':>7s}")  # fmt: skip
    for row in rows:
        print(f"{row['shape']:>16s} {row['dtype']:9s} {row['variant']:15s} {row['ms']:8.4f} "
              f"{row['tflops']:8.0f} {row['vs_torch_mm']:6.3f} {row['vs_tile_language']:7.3f}")
    for variant, runs in host.items():
        print(f"host us a call at 1024^3 fp16, {variant}: {', '.join(f'{u:.1f}' for u in runs)}")
    config = pingpong.TILE | dict(STAGES=pingpong.STAGES, GROUP_M=pingpong.GROUP_M)
    timing.write_json(args.output, {"environment": timing.environment(), "config": config,
                                    "rows": rows, "host_us_per_call": host},
                      script=__file__, argv=argv)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
