"""Does the GEMM gap follow the epilogue? Reference, torch.mm, and the reference with its store
skipped, over K (GPU only, ~90 s).

    python3 lab/gemm-epilogue/gemm_epilogue.py --output results/h200/gemm-epilogue.json
    python3 lab/gemm-epilogue/gemm_epilogue.py --profile reference --shape 16384 1024 1024

(the second under Nsight Compute)

The reference GEMM is behind cuBLAS by 2-4% at 16384 x 1024 x 1024 and by 1-2% at 4096^3, and
ahead at 8192^3 (``results/NOTES.md``). The three shapes differ most in K: 16, 64 and 128
steps of 64 a tile. Each C tile of the persistent kernel ends in an epilogue (wait for the
last wgmma, round 128 x 256 fp32 accumulators to 16 bits, write them to shared memory, hand
them to TMA) during which the same warps issue no MMA; the next tile's loads overlap it, its
MMAs do not. cuBLAS's Hopper kernels overlap it with a second group of MMA warps. A cost
paid once a tile weighs 1/K: if that is the gap, the gap shrinks as K grows at a fixed M x N.

So this script times, interleaved under CUDA-graph replay (every graph captured first), at
M x N = 16384 x 1024 for K = 1024, 2048, 4096 and 8192, and at 4096^3, all fp16:

* ``reference``: ``matmul`` as it stood (its autotuned persistent kernel);
* ``torch.mm`` (cuBLAS);
* ``no store``: the reference module with one source rewrite (``scripts/_variants.py``): a
  branch the compiler cannot rule out (``M >= 0``, M a runtime argument) skips the tile's
  conversion and store, so every load and MMA still runs and C is never written. Its time
  against the reference's was meant to be what the epilogue costs, C's DRAM writes
  included; it is not checked against the oracle (its C is whatever the buffer held), the
  other two are. On the H200 it ran 1.9-2.4x *slower* than the reference at every K
  (``results/h200/gemm-epilogue.log``): the branch changed the compiled loop, so that
  variant measures the branch, not the epilogue. ``results/NOTES.md`` reads the K sweep
  and Nsight Compute instead.

It prints each variant's time, TFLOP/s, ratio to torch.mm, and the tiling the autotuner
picked for the two Triton variants. ``--profile VARIANT --shape M N K`` instead calls one
variant three times, then once between ``cudaProfilerStart`` and ``cudaProfilerStop`` for
``ncu --profile-from-start off`` (autotuning happens outside that range).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))  # the shared helpers

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
from _records import OneLineParser, positive_int  # noqa: E402
from _variants import rewritten  # noqa: E402

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402
from reference.kernels import matmul as gemm  # noqa: E402

SHAPES = ((16384, 1024, 1024), (16384, 1024, 2048), (16384, 1024, 4096), (16384, 1024, 8192),
          (4096, 4096, 4096))  # fmt: skip
VARIANTS = ("reference", "torch.mm", "no store")
# The tile's conversion and store, skipped at run time behind a test the compiler keeps.
NO_STORE = [(
    "        if not C_DESCRIPTOR:  # a width that is not a multiple of 8: a masked pointer store\n",
    "        if M >= 0:  # always, at run time: the tile is neither rounded nor stored\n"
    "            pass\n"
    "        elif not C_DESCRIPTOR:\n",
    1,
)]


def variant_functions(directory: Path) -> dict:
    spec = ops.get("matmul")
    skipped = rewritten(gemm, NO_STORE, directory, "matmul_no_store")
    return {"reference": (gemm, gemm.matmul), "torch.mm": (None, spec.baselines["torch"]),
            "no store": (skipped, skipped.matmul)}  # fmt: skip


def chosen_tile(module, n: int, k: int) -> str | None:
    """The persistent kernel's autotuned tiling for this N and K (after a call), if known."""
    for key, config in module._matmul_persistent_kernel.cache.items():
        if key[0] == n and key[1] == k:
            kw = config.kwargs
            sub = "sub" if kw["EPILOGUE_SUBTILE"] else "whole"
            return f"{kw['BLOCK_M']}x{kw['BLOCK_N']}x{kw['BLOCK_K']} w{config.num_warps} " \
                   f"s{config.num_stages} {sub}"  # fmt: skip
    return None


def profile(variant: str, shape: tuple[int, int, int]) -> int:
    spec = ops.get("matmul")
    inputs = spec.inputs(shape, torch.float16, 7, device="cuda")
    with tempfile.TemporaryDirectory() as directory:
        _, fn = variant_functions(Path(directory))[variant]
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
    parser = OneLineParser(prog="gemm_epilogue", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive_int, default=7,
                        help="interleaved timing rounds per shape (default 7)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the shuffled order of the rounds (default 0)")
    parser.add_argument("--output", help="write the rows as JSON here")
    parser.add_argument("--profile", choices=VARIANTS,
                        help="call this variant once inside a profiler range, time nothing")
    parser.add_argument("--shape", type=positive_int, nargs=3, metavar=("M", "N", "K"),
                        help="with --profile: the product's sizes")
    args = parser.parse_args(argv)
    if (args.profile is None) != (args.shape is None):
        parser.error("--profile and --shape go together")
    timing.require_gpu("gemm_epilogue.py")
    ops.numerics_policy()
    if args.profile:
        return profile(args.profile, tuple(args.shape))
    timing.warm_gpu()
    spec = ops.get("matmul")
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        functions = variant_functions(Path(directory))
        for shape in SHAPES:
            inputs = spec.inputs(shape, torch.float16, 7, device="cuda")
            calls = {}
            for variant, (_, fn) in functions.items():
                outputs = spec.call(fn, inputs)
                if variant != "no store":
                    failure = timing.oracle_check(spec, outputs, inputs, torch.float16)
                    if failure:
                        raise SystemExit(f"gemm_epilogue.py: {variant} at {shape}: {failure}")
                calls[variant] = lambda fn=fn, x=inputs: spec.call(fn, x)
            medians = timing.interleaved_graph_ms(calls, rounds=args.rounds, seed=args.seed)
            for variant, ms in medians.items():
                module = functions[variant][0]
                rows.append({
                    "shape": spec.shape_label(shape), "variant": variant, "ms": ms,
                    "tflops": spec.flops(shape) / (ms * 1e-3) / 1e12,
                    "vs_torch_mm": medians["torch.mm"] / ms,
                    "vs_reference": medians["reference"] / ms,
                    "tile": chosen_tile(module, shape[1], shape[2]) if module else None,
                })  # fmt: skip
    print(f"{'shape':>18s} {'variant':9s} {'ms':>8s} {'TFLOP/s':>8s} {'vs mm':>6s} "
          f"{'vs ref':>6s}  tile")  # fmt: skip
    for row in rows:
        print(f"{row['shape']:>18s} {row['variant']:9s} {row['ms']:8.4f} {row['tflops']:8.0f} "
              f"{row['vs_torch_mm']:6.3f} {row['vs_reference']:6.3f}  {row['tile'] or '-'}")
    timing.write_json(args.output, {"environment": timing.environment(), "rows": rows},
                      script=__file__, argv=argv)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
