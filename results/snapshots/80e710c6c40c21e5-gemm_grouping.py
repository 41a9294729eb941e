"""Does the grouped tile order matter on this GPU? GROUP_M 1 (row-major) vs 4, 8 and 16.

One tiling (128 x 256 x 64, 8 warps, 3 stages), two kernels (the persistent TMA kernel and the
classic one-program-a-tile kernel), two shapes: 8192^3 bf16 (2048 tiles; A and B are 128 MiB
each, more than the 60 MiB L2, so the order decides how often a panel is fetched from HBM) and
16384 x 1024 x 1024 fp16 (B is 2 MiB and stays in L2 whatever the order: the control). Each
variant is oracle-checked; then the variants of a shape are timed together, ``--rounds``
rounds in a shuffled order (CUDA-graph replay, the median of each variant's rounds), after a
GEMM warm-up. The first version timed them one after another, and at the GPU's power limit
that order decided the result (GROUP_M 8 read 10% slower than 4 and 16 at 8192^3; see
``interleaved_graph_ms``). About 16 compiles: 30-60 s.

Usage, from the repository root:

    python scripts/gemm_grouping.py --output results/h200/gemm-grouping.json
"""

from __future__ import annotations

import time

from _gpu_timing import (
    environment,
    interleaved_graph_ms,
    oracle_check,
    require_gpu,
    warm_gpu,
    write_json,
)
from _records import OneLineParser, positive_int

# isort: split
import torch
import triton
from tune_gemm import persistent_with

from learning import ops
from reference.kernels import matmul as gemm

CASES = (((8192, 8192, 8192), torch.bfloat16), ((16384, 1024, 1024), torch.float16))
GROUPS = (1, 4, 8, 16)
TILE = dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64)
WARPS, STAGES = 8, 3


def classic_with(group_m: int):
    """C = A @ B through the classic kernel at the fixed tiling and ``group_m``."""
    jit = gemm._matmul_kernel.fn.fn  # under the autotuner and the EVEN_K heuristic

    def call(a, b):
        m, k = a.shape
        n = b.shape[1]
        c = torch.empty((m, n), dtype=a.dtype, device=a.device)
        tiles = triton.cdiv(m, TILE["BLOCK_M"]) * triton.cdiv(n, TILE["BLOCK_N"])
        jit[(tiles,)](
            a, b, c, m, n, k,
            a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
            GROUP_M=group_m, EVEN_K=k % TILE["BLOCK_K"] == 0, DOT_IN_FP32=False,
            INPUT_PRECISION="tf32", num_warps=WARPS, num_stages=STAGES, **TILE,
        )  # fmt: skip
        return c

    return call


def main(argv=None) -> int:
    parser = OneLineParser(prog="gemm_grouping", description=__doc__.splitlines()[0])
    parser.add_argument("--output", help="write the rows as JSON here")
    parser.add_argument("--rounds", type=positive_int, default=5,
                        help="interleaved rounds (default 5)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the shuffled order of the rounds (default 0)")
    args = parser.parse_args(argv)
    require_gpu("gemm_grouping.py")
    ops.numerics_policy()
    started = time.perf_counter()
    warm_gpu()
    spec = ops.get("matmul")
    rows = []
    for shape, dtype in CASES:
        inputs = spec.inputs(shape, dtype, 7, device="cuda")
        checked, calls = [], {}
        for group_m in GROUPS:
            persistent = triton.Config(
                dict(TILE, GROUP_M=group_m, EPILOGUE_SUBTILE=True, WARP_SPECIALIZE=False,
                     FLATTEN=True),
                num_warps=WARPS,
                num_stages=STAGES,
            )  # fmt: skip
            for kernel, fn in (("persistent", persistent_with(persistent)),
                               ("classic", classic_with(group_m))):  # fmt: skip
                failure = oracle_check(spec, spec.call(fn, inputs), inputs, dtype)
                checked.append((kernel, group_m, failure))
                if not failure:
                    calls[(kernel, group_m)] = lambda fn=fn, x=inputs: spec.call(fn, x)
        medians = interleaved_graph_ms(calls, rounds=args.rounds, seed=args.seed) if calls else {}
        for kernel, group_m, failure in checked:
            ms = medians.get((kernel, group_m))
            rows.append({
                "shape": spec.shape_label(shape), "dtype": ops.dtype_name(dtype),
                "kernel": kernel, "group_m": group_m, "ms": ms,
                "tflops": spec.flops(shape) / (ms * 1e-3) / 1e12 if ms else None,
                "failure": failure,
            })  # fmt: skip
    print(f"{'shape':<18} {'dtype':<9} {'kernel':<11} {'GROUP_M':>7} {'ms':>8} {'TFLOP/s':>8}")
    for r in rows:
        ms = f"{r['ms']:.4f}" if r["ms"] else "-"
        tflops = f"{r['tflops']:.0f}" if r["tflops"] else "-"
        print(f"{r['shape']:<18} {r['dtype']:<9} {r['kernel']:<11} {r['group_m']:>7} "
              f"{ms:>8} {tflops:>8}  {r['failure']}")  # fmt: skip
    write_json(args.output, {"environment": environment(), "rows": rows,
                             "seconds": round(time.perf_counter() - started, 1)},
               script=__file__, argv=argv)  # fmt: skip
    return 1 if any(r["failure"] for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
