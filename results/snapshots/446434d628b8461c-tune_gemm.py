"""Tune the reference GEMM on an H200: every candidate oracle-checked, then timed against PyTorch.

For each case (4096^3 fp16, 8192^3 bf16, 16384 x 1024 x 1024 fp16, 3000 x 1999 x 1023 fp16)
the candidates are:

* ``reference``: ``matmul`` as the course calls it (autotuned; the persistent TMA kernel for
  16-bit operands, after an aligning copy of an operand whose rows are not 16-byte aligned;
  the classic kernel for fp32);
* ``classic``: the classic blocked kernel alone (autotuned), the "before" of this change;
* ``persistent <tile>``: the persistent kernel at each of its configurations, one at a time,
  so the table shows which tiling the autotuner should find (16-bit only; ``--wide`` adds
  neighbouring tilings: more stages, 256 x 128, BLOCK_K 128, other group sizes;
  ``--warp-specialize`` the reference's tilings with Triton's automatic warp specialization;
  ``--clusters`` tilings shared by a two-CTA cluster, ``num_ctas=2``);
* ``torch.mm`` and, with ``--inductor``, ``torch.compile(torch.mm, mode=
  "max-autotune-no-cudagraphs", dynamic=False)`` compiled fresh for the shape (its own autotuning
  takes 20-60 s a shape, so it is optional).

Training cases (``matmul_train`` at 4096^3 and 16384 x 1024 x 1024 fp16): the reference step
(forward + dA + dB through autograd) against the same step through ``torch.mm``, plus the
weight gradient dB alone at split counts 1 ... 16 where the rule splits (16384 x 1024 x 1024), to
show where the split-K rule should land.

Phases, in order: refuse without a GPU -> numerics policy (no TF32) -> warm the GPU (~200 ms of
GEMMs) -> per case: make inputs, compute the float64 oracle once, check each candidate, time it
(CUDA-graph replay, graphs captured first) -> table -> JSON. A candidate that fails the oracle
is reported and not timed. Compiles dominate the run time (about 60 kernels); a second run on
the same machine hits Triton's disk cache. The candidates of a case are checked first and then
timed together, ``--rounds`` rounds in a shuffled order (``interleaved_graph_ms``): timed one
after another, a GEMM's figure depended on what ran before it.

Usage, from the repository root:

    python scripts/tune_gemm.py --output results/h200/tune-gemm.json            # ~100-150 s
    python scripts/tune_gemm.py --inductor --output results/h200/tune-gemm.json # + 2-4 min
"""

from __future__ import annotations

import time

from _gpu_timing import (
    environment,
    graph_ms,
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

from learning import ops
from reference.kernels import matmul as gemm

FORWARD_CASES = (
    ((4096, 4096, 4096), torch.float16),
    ((8192, 8192, 8192), torch.bfloat16),
    ((16384, 1024, 1024), torch.float16),
    ((3000, 1999, 1023), torch.float16),
)
TRAIN_CASES = (((4096, 4096, 4096), torch.float16), ((16384, 1024, 1024), torch.float16))
SPLITS = (1, 2, 4, 6, 8, 12, 16)
SEED = 20_240
AGAIN = "reference again"  # the reference timed twice: an A/A pair in every table
DEVICE = "cuda"


def tile_label(config: triton.Config) -> str:
    kw = config.kwargs
    subtile = " sub" if kw.get("EPILOGUE_SUBTILE") else ""
    ws = " ws" if kw.get("WARP_SPECIALIZE") else ""
    nested = " nested" if not kw.get("FLATTEN", True) else ""
    cluster = f" ctas{config.num_ctas}" if config.num_ctas > 1 else ""
    return (
        f"persistent {kw['BLOCK_M']}x{kw['BLOCK_N']}x{kw['BLOCK_K']} "
        f"w{config.num_warps} s{config.num_stages} g{kw['GROUP_M']}{subtile}{ws}{nested}"
        f"{cluster}"
    )


def persistent_with(config: triton.Config):
    """C = A @ B through the persistent kernel at one fixed configuration (no autotuning)."""
    jit = gemm._matmul_persistent_kernel.fn  # under the autotuner

    def call(a, b):
        a, b = gemm._with_aligned_rows(a), gemm._with_aligned_rows(b)
        m, k = a.shape
        n = b.shape[1]
        c = torch.empty((m, n), dtype=a.dtype, device=a.device)
        programs = gemm._sm_count(a.device) // config.num_ctas  # a cluster of CTAs a program
        kw = config.kwargs
        tiles = triton.cdiv(m, kw["BLOCK_M"]) * triton.cdiv(n, kw["BLOCK_N"])
        triton.set_allocator(gemm._workspace)
        jit[(min(programs, tiles),)](
            a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
            NUM_SMS=programs, A_COLUMN_MAJOR=a.stride(1) != 1, B_COLUMN_MAJOR=b.stride(1) != 1,
            C_DESCRIPTOR=(n * c.element_size()) % 16 == 0, DOT_IN_FP32=False,
            num_warps=config.num_warps, num_stages=config.num_stages,
            num_ctas=config.num_ctas, **kw,
        )  # fmt: skip
        return c

    return call


def _config(bm, bn, bk, warps, stages, subtile, group, ws=False, flatten=True, ctas=1):
    tile = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=group, EPILOGUE_SUBTILE=subtile,
                WARP_SPECIALIZE=ws, FLATTEN=flatten)  # fmt: skip
    return triton.Config(tile, num_warps=warps, num_stages=stages, num_ctas=ctas)


def cluster_configs() -> list[triton.Config]:
    """``--clusters``: tiles shared by a cluster of two CTAs (``num_ctas=2``), as cuBLAS's
    kernels at these shapes are; Triton splits each tile between the two."""
    configs = []
    for subtile in (True, False):  # with num_ctas=2, Triton 3.6 fails to lower the subtiled
        configs += [                 # epilogue (its 3-D reshape) on the regular shapes
            _config(256, 256, 64, 8, 3, subtile, 16, ctas=2),  # 128 x 256 a CTA
            _config(256, 128, 64, 8, 4, subtile, 16, ctas=2),  # 128 x 128 a CTA
            _config(128, 256, 64, 8, 3, subtile, 16, ctas=2),  # 64 x 256 or 128 x 128 a CTA
        ]
    return configs


def wide_configs() -> list[triton.Config]:
    """``--wide``: the reference's tilings plus neighbours (stages, tile shape, warps, group)."""
    extra = [
        _config(128, 256, 64, 8, 4, True, 16),
        _config(256, 128, 64, 8, 3, True, 16),
        _config(128, 128, 64, 4, 4, False, 16),
        _config(128, 128, 128, 8, 3, True, 16),
        _config(64, 256, 64, 4, 4, True, 16),
        _config(128, 256, 64, 8, 3, True, 8),
        _config(128, 256, 64, 8, 3, True, 4),
    ]
    return [*gemm._persistent_configs(False), *extra]


def warp_specialized_configs() -> list[triton.Config]:
    """``--warp-specialize``: the reference's tilings with Triton's automatic warp
    specialization of the tile loop (Hopper's pass in Triton 3.6), flattened and nested."""
    configs = []
    for config in gemm._persistent_configs(False):
        for flatten in (True, False):
            kw = dict(config.kwargs, WARP_SPECIALIZE=True, FLATTEN=flatten)
            configs.append(triton.Config(kw, num_warps=config.num_warps,
                                         num_stages=config.num_stages))  # fmt: skip
    configs.append(_config(128, 256, 64, 4, 3, True, 16, ws=True))  # one consumer warp group
    configs.append(_config(128, 128, 64, 4, 4, True, 16, ws=True))
    return configs


def inductor_mm():
    torch._dynamo.reset()
    return torch.compile(torch.mm, mode="max-autotune-no-cudagraphs", dynamic=False)


def check(spec, label, fn, inputs, dtype, case) -> tuple[dict, object]:
    """Check ``fn`` against the oracle; its row and, if it passes, the call to time."""
    started = time.perf_counter()
    call = None
    try:
        outputs = spec.call(fn, inputs)
        torch.cuda.synchronize()
        failure = oracle_check(spec, outputs, inputs, dtype)
        if not failure:
            call = lambda: spec.call(fn, inputs)  # noqa: E731
    except Exception as error:  # a config that does not compile (shared memory) is a result
        failure = f"{type(error).__name__}: {str(error).splitlines()[0][:120]}"
    row = {"case": case, "candidate": label, "ms": None, "tflops": None, "failure": failure,
           "seconds": round(time.perf_counter() - started, 1)}  # fmt: skip
    return row, call


def measure_all(spec, candidates, inputs, dtype, flops, rows, case, rounds, seed=0) -> None:
    """Check every candidate, then time those that pass together, interleaved; append rows."""
    checked = [check(spec, label, fn, inputs, dtype, case) for label, fn in candidates]
    calls = {row["candidate"]: call for row, call in checked if call is not None}
    medians = interleaved_graph_ms(calls, rounds=rounds, seed=seed) if calls else {}
    for row, _ in checked:
        row["ms"] = medians.get(row["candidate"])
        row["tflops"] = flops / (row["ms"] * 1e-3) / 1e12 if row["ms"] else None
        rows.append(row)


def forward_case(shape, dtype, use_inductor, wide, warp_specialize, clusters, rounds, rows,
                 seed=0):  # fmt: skip
    spec = ops.get("matmul")
    case = f"matmul {spec.shape_label(shape)} {ops.dtype_name(dtype)}"
    inputs = spec.inputs(shape, dtype, SEED, device=DEVICE)
    candidates = [("reference", gemm.matmul), (AGAIN, gemm.matmul)]
    candidates.append(("classic", lambda a, b: gemm._launch(gemm._matmul_kernel, a, b)))
    if dtype != torch.float32:
        configs = wide_configs() if wide else gemm._persistent_configs(False)
        if warp_specialize:
            configs = [*configs, *warp_specialized_configs()]
        if clusters:
            configs = [*configs, *cluster_configs()]
        for config in configs:
            candidates.append((tile_label(config), persistent_with(config)))
    candidates.append(("torch.mm", spec.baselines["torch"]))
    if use_inductor:
        compiled = inductor_mm()
        candidates.append(("inductor max-autotune", lambda a, b: compiled(a, b)))
    measure_all(spec, candidates, inputs, dtype, spec.flops(shape), rows, case, rounds, seed)


def train_case(shape, dtype, rounds, rows, seed=0):
    spec = ops.get("matmul_train")
    case = f"matmul_train {spec.shape_label(shape)} {ops.dtype_name(dtype)}"
    inputs = spec.inputs(shape, dtype, SEED, device=DEVICE)
    candidates = [("reference", gemm.matmul), (AGAIN, gemm.matmul),
                  ("torch.mm", spec.baselines["torch"])]  # fmt: skip
    measure_all(spec, candidates, inputs, dtype, spec.flops(shape), rows, case, rounds, seed)

    # dB alone (K x N output, reduction over M) at several split counts, and cuBLAS's dB: only
    # where the rule splits (an output of fewer tiles than SMs).
    m, n, k = shape
    if gemm._split_k(k, n, m, inputs["a"].device) is None:
        return
    a, grad_c = inputs["a"].detach(), inputs["grad_output"]
    expected = (a.double().T @ grad_c.double()).to(dtype)
    db_case = f"dB {k}x{n} reduce {m} {ops.dtype_name(dtype)}"
    db_flops = 2 * m * n * k
    for splits in SPLITS:
        call = lambda s=splits: gemm._launch(gemm._matmul_rows_kernel, a.T, grad_c, s)  # noqa: E731
        ok = torch.allclose(call().double(), expected.double(), atol=4e-2, rtol=1.6e-2)
        ms = graph_ms(call) if ok else None
        rows.append({
            "case": db_case, "candidate": f"rows split {splits}", "ms": ms,
            "tflops": db_flops / (ms * 1e-3) / 1e12 if ms else None,
            "failure": "" if ok else "differs from A^T dC", "seconds": None,
        })  # fmt: skip
    ms = graph_ms(lambda: torch.mm(a.T, grad_c))
    tflops = db_flops / (ms * 1e-3) / 1e12
    row = {"case": db_case, "candidate": "torch.mm", "ms": ms, "tflops": tflops, "failure": ""}
    rows.append(row | {"seconds": None})


def add_ratios(rows):
    """ratio = the best PyTorch candidate's ms / this candidate's ms (> 1: faster than PyTorch)."""
    for case in dict.fromkeys(r["case"] for r in rows):
        torch_ms = [
            r["ms"] for r in rows
            if r["case"] == case and r["ms"] and r["candidate"].startswith(("torch", "inductor"))
        ]  # fmt: skip
        best = min(torch_ms) if torch_ms else None
        for r in rows:
            if r["case"] == case:
                r["ratio"] = best / r["ms"] if best and r["ms"] else None


def a_a_spreads(rows) -> dict[str, float]:
    """Per case, how far apart the two timings of the reference read (``AGAIN`` over
    ``reference`` minus one): the method's own error in that table."""
    ms = {(r["case"], r["candidate"]): r["ms"] for r in rows}
    return {
        case: ms[(case, AGAIN)] / ms[(case, "reference")] - 1
        for case, label in ms
        if label == "reference" and ms[(case, label)] and ms.get((case, AGAIN))
    }


def print_table(rows):
    print(f"{'case':<38} {'candidate':<36} {'ms':>8} {'TFLOP/s':>8} {'ratio':>6}  note")
    for r in rows:
        ms = f"{r['ms']:.4f}" if r["ms"] else "-"
        tf = f"{r['tflops']:.0f}" if r["tflops"] else "-"
        ratio = f"{r['ratio']:.3f}" if r.get("ratio") else "-"
        print(f"{r['case']:<38} {r['candidate']:<36} {ms:>8} {tf:>8} {ratio:>6}  {r['failure']}")
    spreads = a_a_spreads(rows)
    if spreads:
        worst = max(spreads.values(), key=abs)
        print(f"A/A ({AGAIN!r} against 'reference', the same code): "
              + ", ".join(f"{case} {spread:+.1%}" for case, spread in spreads.items())
              + f"; a difference under {abs(worst):.1%} here is within the method's error")


def main(argv=None) -> int:
    parser = OneLineParser(prog="tune_gemm", description=__doc__.splitlines()[0])
    parser.add_argument("--inductor", action="store_true", help="add Inductor max-autotune")
    parser.add_argument("--wide", action="store_true",
                        help="time more persistent tilings than the reference's three")
    parser.add_argument("--warp-specialize", action="store_true",
                        help="add the reference's tilings with warp specialization")
    parser.add_argument("--clusters", action="store_true",
                        help="add tilings shared by two-CTA clusters (num_ctas=2)")
    parser.add_argument("--forward-only", action="store_true",
                        help="skip the training cases")
    parser.add_argument("--rounds", type=positive_int, default=5,
                        help="interleaved timing rounds per case (default 5)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the shuffled order of the rounds (default 0)")
    parser.add_argument("--output", help="write the rows as JSON here")
    args = parser.parse_args(argv)
    require_gpu("tune_gemm.py")
    ops.numerics_policy()
    started = time.perf_counter()
    warm_gpu()
    rows: list[dict] = []
    for shape, dtype in FORWARD_CASES:
        forward_case(shape, dtype, args.inductor, args.wide, args.warp_specialize,
                     args.clusters, args.rounds, rows, args.seed)  # fmt: skip
        print(f"  {shape} {dtype} done at {time.perf_counter() - started:.0f} s", flush=True)
    for shape, dtype in () if args.forward_only else TRAIN_CASES:
        train_case(shape, dtype, args.rounds, rows, args.seed)
        print(f"  train {shape} done at {time.perf_counter() - started:.0f} s", flush=True)
    add_ratios(rows)
    print_table(rows)
    write_json(args.output, {"environment": environment(), "rows": rows, "seed": args.seed,
                             "a_a": a_a_spreads(rows),
                             "seconds": round(time.perf_counter() - started, 1)},
               script=__file__, argv=argv)  # fmt: skip
    return 1 if any(r["failure"] and "Error" not in r["failure"] for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
