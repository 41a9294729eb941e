"""A ping-pong Hopper GEMM in Gluon against the reference and torch.mm (GPU only; ~60 s).

    python3 scripts/gemm_pingpong.py --output results/h200/gemm-pingpong.json
    python3 scripts/gemm_pingpong.py --compile-only   # no GPU: compile for sm_90, print its use

Under Nsight Compute (``results/h200/ncu-gemm-*.log``) cuBLAS's kernel at 16384 x 1024 x 1024
keeps the tensor pipe busy 75% of the time and the reference 71%, the same 5% as their times.
The reference's tile loop is one software pipeline in which the same 8 warps load, multiply
and, once a tile, wait for the last MMA, round the accumulator and store it: the tensor cores
idle through that epilogue, which at K = 1024 (16 steps a tile) is a large share of a tile.

Triton's tile language cannot give two warp groups different tiles. Gluon, the lower-level
language in the same package (``triton.experimental.gluon``), can. This kernel is the
"ping-pong" schedule of Hopper GEMM libraries:

* one producer warp issues every TMA load of the program's tiles, in order, into a ring of
  ``STAGES`` shared-memory buffers (an mbarrier pair a buffer: "ready", "empty");
* two consumer warp groups (4 warps each) take the program's tiles in turn, the first the
  even ones, the second the odd ones; each multiplies its 128 x 128 tile with asynchronous
  wgmma (one in flight), frees each buffer as soon as its MMA is done, then rounds and stores
  its tile through its own shared buffer and TMA, while the other group's MMAs run.

The buffers are consumed in the order the producer filled them, so the second group's first
MMA waits for buffers the first group is still freeing: the two groups' MMAs take turns and
each epilogue runs under the other's MMAs. Every output is checked against the float64
oracle before it is timed; timing is interleaved graph replay, every graph captured first.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import learning  # noqa: E402,F401  (selects the Triton backend before triton is imported)

# isort: split
import torch  # noqa: E402
import triton  # noqa: E402
from _records import OneLineParser, positive_int  # noqa: E402
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402
from triton.experimental.gluon.language.nvidia.hopper import (  # noqa: E402
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

SHAPES = ((16384, 1024, 1024), (4096, 4096, 4096), (8192, 8192, 8192))


@gluon.jit
def _tile_origin(tile, tiles_m, tiles_n, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                 GROUP_M: gl.constexpr):  # fmt: skip
    # the reference's grouped order: super-rows of GROUP_M tile rows
    tiles_per_group = GROUP_M * tiles_n
    first_tile_m = (tile // tiles_per_group) * GROUP_M
    group_rows = min(tiles_m - first_tile_m, GROUP_M)
    row = (first_tile_m + (tile % tiles_per_group) % group_rows) * BLOCK_M
    col = ((tile % tiles_per_group) // group_rows) * BLOCK_N
    return row, col


@gluon.jit
def _producer(a_desc, b_desc, a_bufs, b_bufs, ready, empty, M, N, K,
              BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
              GROUP_M: gl.constexpr, STAGES: gl.constexpr, NUM_SMS: gl.constexpr):  # fmt: skip
    tiles_m = gl.cdiv(M, BLOCK_M)
    tiles_n = gl.cdiv(N, BLOCK_N)
    k_steps = gl.cdiv(K, BLOCK_K)
    step = 0  # buffers filled so far: the ring's position
    for tile in range(gl.program_id(0), tiles_m * tiles_n, NUM_SMS):
        row, col = _tile_origin(tile, tiles_m, tiles_n, BLOCK_M, BLOCK_N, GROUP_M)
        for k_step in range(k_steps):
            slot = step % STAGES
            # wait until the consumer has freed this buffer (a fresh barrier passes phase 1)
            mbarrier.wait(empty.index(slot), ((step // STAGES) & 1) ^ 1)
            bar = ready.index(slot)
            mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
            k = k_step * BLOCK_K
            tma.async_copy_global_to_shared(a_desc, [row, k], bar, a_bufs.index(slot))
            tma.async_copy_global_to_shared(b_desc, [k, col], bar, b_bufs.index(slot))
            step += 1


@gluon.jit
def _consumer(c_desc, a_bufs, b_bufs, c_buf, ready, empty, turn, M, N, K, GROUP: gl.constexpr,
              BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
              GROUP_M: gl.constexpr, STAGES: gl.constexpr, NUM_SMS: gl.constexpr):  # fmt: skip
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16])
    tiles_m = gl.cdiv(M, BLOCK_M)
    tiles_n = gl.cdiv(N, BLOCK_N)
    k_steps = gl.cdiv(K, BLOCK_K)
    first = gl.program_id(0) + GROUP * NUM_SMS  # this group's tiles: every other one
    nth = GROUP  # the program's tile count before this tile
    for tile in range(first, tiles_m * tiles_n, 2 * NUM_SMS):
        row, col = _tile_origin(tile, tiles_m, tiles_n, BLOCK_M, BLOCK_N, GROUP_M)
        # Take turns: start this tile's MMAs once the other group has issued the previous
        # tile's. Besides ordering the MMAs, this keeps the ring's phases unambiguous: a group
        # that ran ahead would wait on a buffer two fills early, and a parity cannot tell.
        mine = nth // 2  # this group's tiles before this one
        if GROUP == 0:
            mbarrier.wait(turn.index(0), (mine + 1) & 1, pred=mine > 0)
        else:
            mbarrier.wait(turn.index(1), mine & 1)
        step = nth * k_steps
        acc = gl.zeros((BLOCK_M, BLOCK_N), gl.float32, acc_layout)
        for k_step in range(k_steps):
            slot = step % STAGES
            mbarrier.wait(ready.index(slot), (step // STAGES) & 1)
            a, b = a_bufs.index(slot), b_bufs.index(slot)
            acc = warpgroup_mma(a, b, acc, is_async=True)
            # at most this MMA in flight: the one before it is done, and its buffer is free
            acc, a, b = warpgroup_mma_wait(1, deps=(acc, a, b))
            mbarrier.arrive(empty.index((step + STAGES - 1) % STAGES), pred=k_step > 0)
            step += 1
        mbarrier.arrive(turn.index(1 - GROUP))  # the other group's turn
        acc = warpgroup_mma_wait(0, deps=(acc,))
        mbarrier.arrive(empty.index((step + STAGES - 1) % STAGES))
        tma.store_wait(0)  # this group's previous tile has left c_buf
        c_buf.store(acc.to(c_desc.dtype))
        fence_async_shared()
        tma.async_copy_shared_to_global(c_desc, [row, col], c_buf)
        nth += 2
    tma.store_wait(0)


@gluon.jit
def _matmul_pingpong_kernel(a_desc, b_desc, c_desc, GROUP_M: gl.constexpr, STAGES: gl.constexpr,
                            NUM_SMS: gl.constexpr):  # fmt: skip
    dtype: gl.constexpr = a_desc.dtype
    BLOCK_M: gl.constexpr = c_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = c_desc.block_type.shape[1]
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    M = a_desc.shape[0]
    K = a_desc.shape[1]
    N = b_desc.shape[1]
    a_bufs = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_M, BLOCK_K], a_desc.layout)
    b_bufs = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_K, BLOCK_N], b_desc.layout)
    c_bufs = gl.allocate_shared_memory(dtype, [2, BLOCK_M, BLOCK_N], c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=1)
    for i in gl.static_range(2):
        mbarrier.init(turn.index(i), count=1)

    gl.warp_specialize([
        (_consumer, (c_desc, a_bufs, b_bufs, c_bufs.index(0), ready, empty, turn, M, N, K, 0,
                     BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, STAGES, NUM_SMS)),
        (_consumer, (c_desc, a_bufs, b_bufs, c_bufs.index(1), ready, empty, turn, M, N, K, 1,
                     BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, STAGES, NUM_SMS)),
        (_producer, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, M, N, K,
                     BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, STAGES, NUM_SMS)),
    ], [4, 1], [232, 40])  # fmt: skip


TILE = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64)
CONFIG = dict(GROUP_M=16, STAGES=5)
MAXNREG = 168  # 65536 registers over 12 warps (3 warp groups) of 32 threads


def _descriptors(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> tuple:
    """Host-side TMA descriptors of the three matrices, in the tiles the kernel moves."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    dtype = gl.float16 if a.dtype == torch.float16 else gl.bfloat16
    bm, bn, bk = TILE["BLOCK_M"], TILE["BLOCK_N"], TILE["BLOCK_K"]
    return tuple(
        TensorDescriptor.from_tensor(x, block, gl.NVMMASharedLayout.get_default_for(block, dtype))
        for x, block in ((a, [bm, bk]), (b, [bk, bn]), (c, [bm, bn]))
    )


def matmul_pingpong(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m, n = a.shape[0], b.shape[1]
    c = torch.empty((m, n), device=a.device, dtype=a.dtype)
    sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    tiles = triton.cdiv(m, TILE["BLOCK_M"]) * triton.cdiv(n, TILE["BLOCK_N"])
    _matmul_pingpong_kernel[(min(sms, tiles),)](
        *_descriptors(a, b, c), **CONFIG, NUM_SMS=sms, num_warps=4, maxnreg=MAXNREG)
    return c


def compile_only() -> int:
    """Compile for sm_90 on any machine (Triton ships ptxas) and print what it uses."""
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import BaseBackend, GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    a, b, c = (torch.empty(shape, dtype=torch.float16) for shape in ((256, 128), (128, 256),
                                                                      (256, 256)))  # fmt: skip
    signature = {name: native_specialize_impl(BaseBackend, desc, False, True, True)[0]
                 for name, desc in zip(("a_desc", "b_desc", "c_desc"), _descriptors(a, b, c),
                                       strict=True)}
    constexprs = CONFIG | {"NUM_SMS": 132}
    signature |= {name: "constexpr" for name in constexprs}
    source = GluonASTSource(_matmul_pingpong_kernel, signature, constexprs={
        (list(signature).index(name),): value for name, value in constexprs.items()})
    compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32),
                              options={"num_warps": 4, "maxnreg": MAXNREG})
    meta = compiled.metadata
    print(f"compiled for sm_90: {meta.num_warps} warps, shared {meta.shared} bytes, "
          f"ptx {len(compiled.asm['ptx'])} chars")
    return 0


def main(argv=None) -> int:
    parser = OneLineParser(prog="gemm_pingpong", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive_int, default=7,
                        help="interleaved timing rounds per shape (default 7)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the shuffled order of the rounds (default 0)")
    parser.add_argument("--output", help="write the rows as JSON here")
    parser.add_argument("--compile-only", action="store_true",
                        help="compile the kernel for sm_90 and stop (no GPU needed)")
    args = parser.parse_args(argv)
    if args.compile_only:
        return compile_only()
    import _gpu_timing as timing

    from learning import ops
    from reference.kernels import matmul as gemm

    timing.require_gpu("gemm_pingpong.py")
    ops.numerics_policy()
    timing.warm_gpu()
    spec = ops.get("matmul")
    rows = []
    for shape in SHAPES:
        dtype = torch.bfloat16 if shape[0] == 8192 else torch.float16
        inputs = spec.inputs(shape, dtype, 7, device="cuda")
        calls = {}
        for variant, fn in (("reference", gemm.matmul), ("torch.mm", spec.baselines["torch"]),
                            ("ping-pong", matmul_pingpong)):  # fmt: skip
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
                "vs_reference": medians["reference"] / ms,
            })  # fmt: skip
    print(f"{'shape':>16s} {'dtype':9s} {'variant':10s} {'ms':>8s} {'TFLOP/s':>8s} "
          f"{'vs mm':>6s} {'vs ref':>6s}")  # fmt: skip
    for row in rows:
        print(f"{row['shape']:>16s} {row['dtype']:9s} {row['variant']:10s} {row['ms']:8.4f} "
              f"{row['tflops']:8.0f} {row['vs_torch_mm']:6.3f} {row['vs_reference']:6.3f}")
    timing.write_json(args.output, {"environment": timing.environment(),
                                    "config": TILE | CONFIG,
                                    "rows": rows}, script=__file__, argv=argv)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
