"""Is the GEMM gap at 4096^3 and 16384 x 1024 x 1024 wave quantization? (GPU only, ~60 s)

    python3 lab/gemm-waves/gemm_waves.py --output results/h200/gemm-waves.json

The persistent kernel deals whole C tiles to 132 programs, one an SM. A C of 4096 x 4096 in
128 x 256 tiles is 512 tiles: 3.88 tiles an SM, so 116 SMs run four and 16 run three, and the
kernel lasts four tile-times where 3.88 would do (97%). Any power-of-two tiling of these
shapes gives the same 97% on 132 SMs (512, 1024 and 2048 tiles are all 3.88 x 2^k waves).
cuBLAS is not bound to whole tiles (it can split the last wave's reduction between SMs).

So this script times the reference ``matmul`` and ``torch.mm``, interleaved under CUDA-graph
replay, at each gap shape and at the same shape with M grown until the tiles fill whole waves
(4224 = 33 x 128 rows: 528 tiles, four full waves; 16896 x 1024 x 1024 likewise), and at
8192^3 bf16 (2048 tiles, 15.5 waves) against 8448 x 8192 x 8192. If quantization is the gap,
the reference gains ~3% TFLOP/s from the grown M and torch.mm less. It also names the kernel
cuBLAS runs for each shape (from the profiler), and the tile the autotuner chose.
Every output is checked against the float64 oracle before it is timed.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))  # the shared helpers

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
from _records import OneLineParser, positive_int  # noqa: E402

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402
from reference.kernels import matmul as gemm  # noqa: E402

PAIRS = (  # (shape with a partial last wave, the same with M grown to whole waves), dtype
    (((4096, 4096, 4096), (4224, 4096, 4096)), torch.float16),
    (((16384, 1024, 1024), (16896, 1024, 1024)), torch.float16),
    (((8192, 8192, 8192), (8448, 8192, 8192)), torch.bfloat16),
)


def cublas_kernels(call) -> list[str]:
    """Names of the GPU kernels one ``call()`` runs, as the profiler records them."""
    from torch.profiler import ProfilerActivity, profile

    call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as profiler:
        call()
        torch.cuda.synchronize()
    events = profiler.key_averages()
    return sorted({e.key for e in events if str(getattr(e, "device_type", "")).endswith("CUDA")})


def chosen_tile(n: int, k: int) -> str | None:
    """The persistent kernel's autotuned tile for this N and K (after a call), if known."""
    for key, config in gemm._matmul_persistent_kernel.cache.items():
        if key[0] == n and key[1] == k:
            kw = config.kwargs
            return f"{kw['BLOCK_M']}x{kw['BLOCK_N']}"
    return None


def main(argv=None) -> int:
    parser = OneLineParser(prog="gemm_waves", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive_int, default=7,
                        help="interleaved timing rounds per pair (default 7)")  # fmt: skip
    parser.add_argument("--output", help="write the rows as JSON here")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the shuffled order of the rounds (default 0)")
    args = parser.parse_args(argv)
    timing.require_gpu("gemm_waves.py")
    ops.numerics_policy()
    timing.warm_gpu()
    spec = ops.get("matmul")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for shapes, dtype in PAIRS:
        calls, meta = {}, {}
        for shape in shapes:
            inputs = spec.inputs(shape, dtype, 7, device="cuda")
            for variant, fn in (("reference", gemm.matmul), ("torch.mm", spec.baselines["torch"])):
                failure = timing.oracle_check(spec, spec.call(fn, inputs), inputs, dtype)
                if failure:
                    raise SystemExit(f"gemm_waves.py: {variant} at {shape}: {failure}")
                label = (shape, variant)
                calls[label] = lambda fn=fn, x=inputs: spec.call(fn, x)
                meta[label] = cublas_kernels(calls[label]) if variant == "torch.mm" else []
        medians = timing.interleaved_graph_ms(calls, rounds=args.rounds, seed=args.seed)
        for (shape, variant), ms in medians.items():
            m, n, k = shape
            tile = chosen_tile(n, k) if variant == "reference" else None
            tiles = None
            if tile:
                bm, bn = map(int, tile.split("x"))
                tiles = math.ceil(m / bm) * math.ceil(n / bn)
            rows.append({
                "shape": spec.shape_label(shape), "dtype": ops.dtype_name(dtype),
                "variant": variant, "ms": ms, "tflops": spec.flops(shape) / (ms * 1e-3) / 1e12,
                "tile": tile, "tiles": tiles, "waves": tiles / sms if tiles else None,
                "kernels": meta[(shape, variant)],
            })  # fmt: skip
    print(f"{'shape':>18s} {'dtype':9s} {'variant':10s} {'ms':>8s} {'TFLOP/s':>8s} "
          f"{'tile':>8s} {'waves':>6s}  kernels")  # fmt: skip
    for row in rows:
        waves = timing.fmt(row["waves"], ".2f")
        print(f"{row['shape']:>18s} {row['dtype']:9s} {row['variant']:10s} {row['ms']:8.4f} "
              f"{row['tflops']:8.0f} {row['tile'] or '-':>8s} {waves:>6s}  "
              f"{' '.join(row['kernels'])}")  # fmt: skip
    timing.write_json(args.output, {"environment": timing.environment(), "rows": rows},
                      script=__file__, argv=argv)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
