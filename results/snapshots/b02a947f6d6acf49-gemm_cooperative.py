"""A cooperative Hopper GEMM in Gluon, against the ping-pong kernel and cuBLAS, each alone
(GPU only; ~2 min).

    python3 scripts/gemm_cooperative.py --output results/h200/gemm-cooperative.json

``scripts/gemm_regimes.py`` found the ping-pong kernel (``reference/kernels/pingpong.py``)
3-5% behind ``torch.mm`` at 16384 x 1024 x 1024 both on a rested GPU and, run alone, at its
power limit, where its clock settles 8-9% under cuBLAS's: it does less work a cycle at the
top clock and draws more power for the same work. One cost it pays that cuBLAS's kernel
(``nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA``) does not is operand traffic: each consumer
group loads both operands of its own 128 x 128 tile, (128 + 128) / (128 x 128) elements a
multiply-add, where a 256 x 128 tile shared by two groups loads (256 + 128) / (256 x 128),
a quarter less (cuBLAS halves one operand again with two-CTA multicast, which Gluon's Hopper
TMA cannot ask for in Triton 3.6).

The *cooperative* schedule: one producer warp fills a ring of ``STAGES`` buffers, each with
both 128-row halves of A's 256 x 64 block and B's 64 x 128 block; the two consumer warp
groups work on the same tile at once, each multiplying its half of A by the shared B, and
each buffer is freed once both have read it (its *empty* barrier counts two arrivals). The
epilogue is no longer hidden under the other group's MMAs: both groups store their halves
together, while the producer already loads the next tile.

The script checks the kernel against the float64 oracle (four operand orientations, both
16-bit dtypes, shapes with ragged edges), then times the three at the three GEMM shapes the
targets name the way ``gemm_regimes.py`` does: each alone, after ``--rest-s`` idle, for
``--seconds`` back to back, with the SM clock read along the way. ``--compile-only`` compiles
the kernel for sm_90 on any machine and prints its registers, warps and shared memory.
"""

from __future__ import annotations

import functools
import itertools
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
import gemm_regimes  # noqa: E402
from _records import OneLineParser, positive_int, positive_seconds  # noqa: E402

# isort: split
import torch  # noqa: E402
import triton  # noqa: E402
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402
from triton.experimental.gluon.language.nvidia.hopper import (  # noqa: E402
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from learning import ops  # noqa: E402
from reference.kernels import pingpong  # noqa: E402
from reference.kernels.pingpong import _column_major, _descriptor, _tile_origin  # noqa: E402

HALF = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64)  # one consumer group's half of a C tile
# A ring buffer is (2 x 128 x 64 + 64 x 128) x 2 bytes = 48 KiB. Three of them leave room for
# each group's 32 KiB C half; four (cuBLAS's kernel name says 64x4: BLOCK_K 64, 4 stages) only
# with the halves stored in two 128 x 64 pieces through 16 KiB a group.
CONFIGS = {"3 stages": dict(STAGES=3, SUBTILE=False), "4 stages": dict(STAGES=4, SUBTILE=True)}
GROUP_M = 8  # 256-row tile rows per super-row of the grouped order
SHAPES = gemm_regimes.SHAPES
PROFILED = ("cooperative", "ping-pong", "torch.mm")  # the cooperative kernel: 4 stages


@gluon.jit
def _producer(a_desc, b_desc, a_bufs, b_bufs, ready, empty, M, N, K,
              BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
              GROUP_M: gl.constexpr, STAGES: gl.constexpr, NUM_SMS: gl.constexpr,
              A_COLUMN_MAJOR: gl.constexpr, B_COLUMN_MAJOR: gl.constexpr):  # fmt: skip
    # one warp: both halves of A's block and B's block of every step of every tile
    HALF_M: gl.constexpr = BLOCK_M // 2
    tiles_m = gl.cdiv(M, BLOCK_M)
    tiles_n = gl.cdiv(N, BLOCK_N)
    k_steps = gl.cdiv(K, BLOCK_K)
    fill = 0
    for tile in range(gl.program_id(0), tiles_m * tiles_n, NUM_SMS):
        row, col = _tile_origin(tile, tiles_m, tiles_n, BLOCK_M, BLOCK_N, GROUP_M)
        for k_step in range(k_steps):
            slot = fill % STAGES
            mbarrier.wait(empty.index(slot), ((fill // STAGES) & 1) ^ 1)
            bar = ready.index(slot)
            mbarrier.expect(bar, 2 * a_desc.block_type.nbytes + b_desc.block_type.nbytes)
            k = k_step * BLOCK_K
            for half in gl.static_range(2):
                if A_COLUMN_MAJOR:
                    tma.async_copy_global_to_shared(a_desc, [k, row + half * HALF_M], bar,
                                                    a_bufs.index(2 * slot + half))
                else:
                    tma.async_copy_global_to_shared(a_desc, [row + half * HALF_M, k], bar,
                                                    a_bufs.index(2 * slot + half))
            if B_COLUMN_MAJOR:
                tma.async_copy_global_to_shared(b_desc, [col, k], bar, b_bufs.index(slot))
            else:
                tma.async_copy_global_to_shared(b_desc, [k, col], bar, b_bufs.index(slot))
            fill += 1


@gluon.jit
def _consumer(c_desc, a_bufs, b_bufs, c_buf, ready, empty, M, N, K, HALF: gl.constexpr,
              BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
              GROUP_M: gl.constexpr, STAGES: gl.constexpr, NUM_SMS: gl.constexpr,
              A_COLUMN_MAJOR: gl.constexpr, B_COLUMN_MAJOR: gl.constexpr,
              SUBTILE: gl.constexpr):  # fmt: skip
    # one warp group: rows HALF * BLOCK_M / 2 onwards of every tile of this program
    HALF_M: gl.constexpr = BLOCK_M // 2
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16])
    tiles_m = gl.cdiv(M, BLOCK_M)
    tiles_n = gl.cdiv(N, BLOCK_N)
    k_steps = gl.cdiv(K, BLOCK_K)
    fill = 0
    for tile in range(gl.program_id(0), tiles_m * tiles_n, NUM_SMS):
        row, col = _tile_origin(tile, tiles_m, tiles_n, BLOCK_M, BLOCK_N, GROUP_M)
        acc = gl.zeros((HALF_M, BLOCK_N), gl.float32, acc_layout)
        for k_step in range(k_steps):
            slot = fill % STAGES
            mbarrier.wait(ready.index(slot), (fill // STAGES) & 1)
            a = a_bufs.index(2 * slot + HALF)
            if A_COLUMN_MAJOR:
                a = a.permute((1, 0))
            b = b_bufs.index(slot)
            if B_COLUMN_MAJOR:
                b = b.permute((1, 0))
            acc = warpgroup_mma(a, b, acc, is_async=True)
            acc, a, b = warpgroup_mma_wait(1, deps=(acc, a, b))
            mbarrier.arrive(empty.index((fill + STAGES - 1) % STAGES), pred=k_step > 0)
            fill += 1
        acc = warpgroup_mma_wait(0, deps=(acc,))
        mbarrier.arrive(empty.index((fill + STAGES - 1) % STAGES))
        c = acc.to(c_desc.dtype)
        if SUBTILE:  # two 128 x 64 pieces through one buffer: 16 KiB a group, not 32
            pieces = gl.permute(gl.reshape(c, [HALF_M, 2, BLOCK_N // 2]), [0, 2, 1])
            left, right = gl.split(pieces)
            tma.store_wait(0)  # the previous piece has left c_buf
            c_buf.store(left)
            fence_async_shared()
            tma.async_copy_shared_to_global(c_desc, [row + HALF * HALF_M, col], c_buf)
            tma.store_wait(0)
            c_buf.store(right)
            fence_async_shared()
            tma.async_copy_shared_to_global(c_desc, [row + HALF * HALF_M, col + BLOCK_N // 2],
                                            c_buf)  # fmt: skip
        else:
            tma.store_wait(0)  # this group's previous half has left c_buf
            c_buf.store(c)
            fence_async_shared()
            tma.async_copy_shared_to_global(c_desc, [row + HALF * HALF_M, col], c_buf)
    tma.store_wait(0)


@gluon.jit
def _matmul_cooperative_kernel(a_desc, b_desc, c_desc, GROUP_M: gl.constexpr,
                               STAGES: gl.constexpr, NUM_SMS: gl.constexpr,
                               A_COLUMN_MAJOR: gl.constexpr, B_COLUMN_MAJOR: gl.constexpr,
                               SUBTILE: gl.constexpr):  # fmt: skip
    dtype: gl.constexpr = c_desc.dtype
    BLOCK_M: gl.constexpr = 2 * c_desc.block_type.shape[0]  # the tile: two groups' halves
    M = c_desc.shape[0]
    N = c_desc.shape[1]
    if A_COLUMN_MAJOR:
        BLOCK_K: gl.constexpr = a_desc.block_type.shape[0]
        K = a_desc.shape[0]
    else:
        BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
        K = a_desc.shape[1]
    if B_COLUMN_MAJOR:
        BLOCK_N: gl.constexpr = b_desc.block_type.shape[0]
    else:
        BLOCK_N: gl.constexpr = b_desc.block_type.shape[1]
    a_bufs = gl.allocate_shared_memory(dtype, [2 * STAGES] + a_desc.block_type.shape,
                                       a_desc.layout)  # fmt: skip
    b_bufs = gl.allocate_shared_memory(dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    c_bufs = gl.allocate_shared_memory(dtype, [2] + c_desc.block_type.shape, c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=2)  # both consumer groups read every buffer
    gl.warp_specialize([
        (_consumer, (c_desc, a_bufs, b_bufs, c_bufs.index(0), ready, empty, M, N, K, 0,
                     BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, STAGES, NUM_SMS,
                     A_COLUMN_MAJOR, B_COLUMN_MAJOR, SUBTILE)),
        (_consumer, (c_desc, a_bufs, b_bufs, c_bufs.index(1), ready, empty, M, N, K, 1,
                     BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, STAGES, NUM_SMS,
                     A_COLUMN_MAJOR, B_COLUMN_MAJOR, SUBTILE)),
        (_producer, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, M, N, K,
                     BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, STAGES, NUM_SMS,
                     A_COLUMN_MAJOR, B_COLUMN_MAJOR)),
    ], [4, 1], [232, 40])


def _launch_arguments(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, sms: int,
                      config: dict):  # fmt: skip
    bm, bn, bk = HALF["BLOCK_M"], HALF["BLOCK_N"], HALF["BLOCK_K"]
    c_block = (bm, bn // 2) if config["SUBTILE"] else (bm, bn)
    descriptors = (_descriptor(a, (bm, bk)), _descriptor(b, (bk, bn)), _descriptor(c, c_block))
    meta = dict(GROUP_M=GROUP_M, STAGES=config["STAGES"], NUM_SMS=sms,
                A_COLUMN_MAJOR=_column_major(a), B_COLUMN_MAJOR=_column_major(b),
                SUBTILE=config["SUBTILE"], num_warps=pingpong.NUM_WARPS,
                maxnreg=pingpong.MAXNREG)  # fmt: skip
    return descriptors, meta


def matmul(a: torch.Tensor, b: torch.Tensor, config: dict = CONFIGS["4 stages"]) -> torch.Tensor:
    """``C = A @ B`` through the cooperative kernel (what ``pingpong.ready`` accepts)."""
    m, n = a.shape[0], b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    sms = pingpong._sm_count(a.device)
    tiles = triton.cdiv(m, 2 * HALF["BLOCK_M"]) * triton.cdiv(n, HALF["BLOCK_N"])
    descriptors, meta = _launch_arguments(a, b, c, sms, config)
    _matmul_cooperative_kernel[(min(sms, tiles),)](*descriptors, **meta)
    return c


def compile_for_hopper(dtype=torch.float16, a_column_major=False, b_column_major=False,
                       config: dict = CONFIGS["4 stages"]):  # fmt: skip
    """The kernel compiled for sm_90 here (Triton's own ``ptxas``), GPU or not."""
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import BaseBackend, GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    bm, bn, bk = HALF["BLOCK_M"], HALF["BLOCK_N"], HALF["BLOCK_K"]
    a = torch.empty((bk, bm) if a_column_major else (bm, bk), dtype=dtype)
    b = torch.empty((bn, bk) if b_column_major else (bk, bn), dtype=dtype)
    a, b = (a.T if a_column_major else a), (b.T if b_column_major else b)
    descriptors, meta = _launch_arguments(a, b, torch.empty((bm, bn), dtype=dtype), 132, config)
    options = {name: meta.pop(name) for name in ("num_warps", "maxnreg")}
    names = ("a_desc", "b_desc", "c_desc")
    signature = {name: native_specialize_impl(BaseBackend, d, False, True, True)[0]
                 for name, d in zip(names, descriptors, strict=True)}  # fmt: skip
    signature |= {name: "constexpr" for name in meta}
    names = list(signature)
    source = GluonASTSource(_matmul_cooperative_kernel, signature, constexprs={
        (names.index(name),): value for name, value in meta.items()})  # fmt: skip
    return triton.compile(source, target=GPUTarget("cuda", 90, 32), options=options)


def kernel_sass(cubin: bytes) -> str:
    """The cubin's SASS, by the ``nvdisasm`` Triton ships."""
    nvdisasm = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "nvdisasm"
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "kernel.cubin"
        path.write_bytes(cubin)
        return subprocess.run([str(nvdisasm), str(path)], capture_output=True, text=True,
                              check=True).stdout  # fmt: skip


CHECKS = ((296, 136, 200), (1000, 264, 520), (4096, 1024, 1024))  # ragged edges and a tall one


def check_oracle(spec) -> int:
    """Every orientation and dtype against the float64 oracle; the number of products checked."""
    checked = 0
    for dtype in (torch.float16, torch.bfloat16):
        for shape in CHECKS:
            for a_t in (False, True):
                for b_t in (False, True):
                    inputs = spec.inputs(shape, dtype, 11, device="cuda")
                    a, b = inputs["a"], inputs["b"]
                    if a_t:
                        a = a.T.contiguous().T
                    if b_t:
                        b = b.T.contiguous().T
                    if not pingpong.ready(a, b):
                        raise SystemExit(f"gemm_cooperative.py: {shape} is not a Hopper product")
                    for name, config in CONFIGS.items():
                        c = matmul(a, b, config)
                        failure = timing.oracle_check(spec, (c,), inputs, dtype)
                        if failure:
                            raise SystemExit(
                                f"gemm_cooperative.py: {name}, {shape} {dtype} "
                                f"A{'t' if a_t else ''} B{'t' if b_t else ''}: {failure}")
                        checked += 1
    return checked


def main(argv=None) -> int:
    parser = OneLineParser(prog="gemm_cooperative", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive_int, default=2,
                        help="rounds of a shuffled order of the variants (default 2)")
    parser.add_argument("--seconds", type=positive_seconds, default=1.0,
                        help="back-to-back replay time per variant and round (default 1)")
    parser.add_argument("--rest-s", type=positive_seconds, default=3.0,
                        help="idle seconds before each variant's replays (default 3)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the shuffled order")
    parser.add_argument("--compile-only", action="store_true",
                        help="compile for sm_90 and print what the kernel is (no GPU needed)")
    parser.add_argument("--profile", choices=PROFILED,
                        help="call this variant once inside a profiler range (for ncu), time "
                             "nothing")  # fmt: skip
    parser.add_argument("--shape", type=positive_int, nargs=3, metavar=("M", "N", "K"),
                        help="with --profile: the product's sizes (fp16)")
    parser.add_argument("--output", help="write the rows as JSON here")
    args = parser.parse_args(argv)
    if (args.profile is None) != (args.shape is None):
        parser.error("--profile and --shape go together")
    if args.compile_only:
        for name, config in CONFIGS.items():
            for dtype, a_t, b_t in itertools.product((torch.float16, torch.bfloat16),
                                                     (False, True), (False, True)):  # fmt: skip
                compiled = compile_for_hopper(dtype, a_t, b_t, config)
                sass = kernel_sass(compiled.asm["cubin"])
                spills = len(re.findall(r"\b(?:STL|LDL)\b", sass))
                print(f"{name}, {ops.dtype_name(dtype)} A{'t' if a_t else ''} "
                      f"B{'t' if b_t else ''}: warps {compiled.metadata.num_warps}, shared "
                      f"{compiled.metadata.shared} bytes, HGMMA {sass.count('HGMMA')}, "
                      f"local loads and stores {spills}")
        return 0
    timing.require_gpu("gemm_cooperative.py")
    ops.numerics_policy()
    spec = ops.get("matmul")
    if args.profile:
        inputs = spec.inputs(tuple(args.shape), torch.float16, 7, device="cuda")
        fn = {"cooperative": matmul, "ping-pong": pingpong.matmul,
              "torch.mm": spec.baselines["torch"]}[args.profile]  # fmt: skip
        for _ in range(3):
            spec.call(fn, inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        spec.call(fn, inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        print(f"profiled {args.profile} at {spec.shape_label(tuple(args.shape))} float16")
        return 0
    checked = check_oracle(spec)
    print(f"oracle: {checked} products match (4 orientations, 2 dtypes, {len(CHECKS)} shapes, "
          f"{len(CONFIGS)} configurations)")
    variants = {f"coop. {name}": functools.partial(matmul, config=config)
                for name, config in CONFIGS.items()}  # fmt: skip
    variants |= {"ping-pong": pingpong.matmul, "torch.mm": spec.baselines["torch"]}
    rows = gemm_regimes.measure(spec, variants, SHAPES, args.rounds, args.seconds, args.rest_s,
                                random.Random(args.seed))  # fmt: skip
    gemm_regimes.print_rows(rows)
    timing.write_json(args.output, {"environment": timing.environment(), "rows": rows,
                                    "oracle_products": checked,
                                    "configs": {name: HALF | config | dict(GROUP_M=GROUP_M)
                                                for name, config in CONFIGS.items()},
                                    "args": {"rounds": args.rounds, "seconds": args.seconds,
                                             "rest_s": args.rest_s, "seed": args.seed}},
                      script=__file__, argv=argv)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
