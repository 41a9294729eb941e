"""The ping-pong GEMM against the tile-language kernel and torch.mm (GPU only; ~60 s).

    python3 scripts/gemm_pingpong.py --host --output results/h200/gemm-pingpong-landed.json

Times ``reference/kernels/pingpong.py`` (the Gluon kernel the 16-bit GEMM runs on Hopper),
the persistent tile-language kernel of ``reference/kernels/matmul.py`` that it replaced there
(reached by telling ``pingpong.ready`` no), and ``torch.mm``, interleaved under CUDA-graph
replay with every graph captured first, at 16384 x 1024 x 1024 and 4096^3 fp16 and 8192^3
bf16. Every output is checked against the float64 oracle before it is timed.

The kernel was first written here, as a probe; ``results/h200/gemm-pingpong.json`` is that
probe's run (its snapshot keeps the probe's source), and the kernel moved to ``reference/``.
``--host`` also prints each variant's host time a call at 1024^3
(``_gpu_timing.host_us_per_call``, three runs). An earlier version of the kernel built its
descriptors on the device; ``gemm-pingpong-device-descriptors.json`` and
``gemm-pingpong-variants.json`` are its runs (their snapshots keep its source and this
script's, whose ``--variants`` timed it with its integers specialized).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
from _records import OneLineParser, positive_int  # noqa: E402

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402
from reference.kernels import matmul as gemm  # noqa: E402
from reference.kernels import pingpong  # noqa: E402

SHAPES = ((16384, 1024, 1024), (4096, 4096, 4096), (8192, 8192, 8192))

def tile_language(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``matmul.py``'s persistent kernel, as the 16-bit GEMM ran before the ping-pong one."""
    ready = pingpong.ready
    pingpong.ready = lambda a, b: False
    try:
        return gemm._launch_persistent(a, b)
    finally:
        pingpong.ready = ready


def main(argv=None) -> int:
    parser = OneLineParser(prog="gemm_pingpong", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive_int, default=7,
                        help="interleaved timing rounds per shape (default 7)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the shuffled order of the rounds (default 0)")
    parser.add_argument("--output", help="write the rows as JSON here")
    parser.add_argument("--host", action="store_true",
                        help="also print each variant's host time a call at 1024^3")
    args = parser.parse_args(argv)
    timing.require_gpu("gemm_pingpong.py")
    ops.numerics_policy()
    timing.warm_gpu()
    spec = ops.get("matmul")
    variants = {"tile lang.": tile_language, "torch.mm": spec.baselines["torch"],
                "ping-pong": pingpong.matmul}  # fmt: skip
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
