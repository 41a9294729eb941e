"""The 16-bit GEMM's Hopper fast path: a *cooperative* kernel, written in Gluon.

Its predecessor, the ping-pong kernel (``pingpong.py``), gives each of two consumer warp
groups a 128 x 128 tile of its own and lets one group's epilogue run under the other's MMAs.
Timed interleaved with ``torch.mm`` it read 1.01-1.07x; timed *alone*, from a rested GPU to its
power limit (``scripts/gemm_regimes.py``; two runs, ``results/h200/gemm-regimes-run1.log`` and
``gemm-regimes.log``), it was behind cuBLAS in both regimes (0.92-0.97x). Rested, at the top
clock, it did less work a cycle; at the power limit it did more work a cycle but drew more
power for it, so the driver held its clock 5-10% under cuBLAS's. (Interleaved, two kernels
share one clock, set by their mix: the ping-pong kernel's power cost was paid by cuBLAS's
samples too.)

The bytes it moves are the likely cost. Each ping-pong group loads both operands of its own
tile: (128 + 128) / (128 x 128) elements a multiply-add. Here the two consumer groups work on
one 256 x 128 tile at once, each multiplying its 128-row half of A's block by the B block they
share: (256 + 128) / (256 x 128), a quarter fewer. Under Nsight Compute at 16384 x 1024 x 1024
(``results/h200/ncu-gemm-regimes-*.log``) the ping-pong kernel moved 462 MB through L2, this
schedule's first version 330 MB and cuBLAS 293 (cuBLAS multicasts one operand to a two-CTA
cluster, which Gluon's Hopper TMA cannot ask for in Triton 3.6). With super-rows of 4 tile
rows (below) the kernel moves 294 MB, cuBLAS 298 in the same run (``ncu-gemm-kept-piece-*.log``).

* **one producer warp** issues every TMA load into a ring of ``STAGES`` buffers; a buffer
  holds both 128 x 64 halves of A's block and B's 64 x 128 block (48 KiB), with a *ready*
  mbarrier (the TMA unit arrives when the bytes have arrived) and an *empty* one that counts
  **two** arrivals: the buffer is free once both groups' MMAs have read it;
* **two consumer warp groups** (4 warps each) take every tile of the program together, each
  multiplying its half with asynchronous wgmma, one MMA in flight;
* **the epilogue**: each group's half goes out as two 128 x 64 pieces through a 16 KiB
  buffer, which is what leaves room for four ring buffers (229,576 bytes of shared memory; a
  32 KiB buffer a group allows only three, 5-6% slower rested). At a tile's end a group
  stores the left piece and keeps the right one in registers (rounded, 32 a thread); it goes
  out while the next tile's first MMA runs, so the tensor cores do not wait for it, nor for
  the left piece to leave the buffer. Keeping the whole half (64 registers beside the next
  accumulator's 128) made ``ptxas`` serialize every wgmma, 8-12% slower
  (``results/h200/gemm-epilogue-overlap-serialized.log``; the tests fail on its note C7514);
* **the tile order**: super-rows of ``GROUP_M`` = 4 tile rows, so that programs running at
  once share A panels and B panels in L2.

Because both groups consume every buffer in the same order and the producer refills a buffer
only after both have freed it, no group can run a whole ring ahead of the other, and a wait by
the parity of a buffer's fill count is never two phases early (the ping-pong kernel needed a
turn barrier for that; ``tests/reference/test_cooperative.py`` models the ring).

Measured alone on the H200 (``results/h200/gemm-epilogue-overlap.log``, each kernel after 3 s
idle, rested and then at its power limit), against ``torch.mm``: 1.02x rested and 1.01x capped
at 16384 x 1024 x 1024, 0.99x and 1.00x at 4096^3 fp16, 1.00x and 1.01x at 8192^3 bf16; the
kernel before the kept piece and the order of 4 (an epilogue at the tile's end, super-rows of
8): 0.99x and 0.98x, 0.98x and 0.99x, 0.99x and 1.01x in the same run.

What it needs is what the ping-pong kernel needs (``pingpong.ready``, the one rule for both):
a compiled Hopper GPU, float16 or bfloat16, each operand row-major or a transposed view with
16-byte-aligned rows, and N a multiple of 8. Every load and store is a tensor descriptor, so
any M, N, K work and none compiles again.
"""

from __future__ import annotations

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from . import pingpong
from .launch import Launcher
from .pingpong import (
    MAXNREG,
    NUM_WARPS,
    _column_major,
    _descriptor,
    _sm_count,
    _tile_origin,
    compile_gluon_for_hopper,
    operands_for_compiling,
)

HALF = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64)  # one consumer group's half of a C tile
TILE_M = 2 * HALF["BLOCK_M"]  # the program's C tile is TILE_M x BLOCK_N
STAGES = 4  # 4 x (2 x 128 x 64 + 64 x 128) x 2 bytes = 192 KiB, + 2 x 16 KiB for C pieces
GROUP_M = 4  # 256-row tile rows per super-row of the grouped order (8: 1-4% slower)
PIECE_N = HALF["BLOCK_N"] // 2  # a half goes out as two 128 x 64 pieces


@gluon.jit
def _producer(a_desc, b_desc, a_bufs, b_bufs, ready, empty, M, N, K,
              BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
              GROUP_M: gl.constexpr, STAGES: gl.constexpr, NUM_SMS: gl.constexpr,
              A_COLUMN_MAJOR: gl.constexpr, B_COLUMN_MAJOR: gl.constexpr):  # fmt: skip
    # one warp: both halves of A's block and B's block, every step of every tile, in order
    HALF_M: gl.constexpr = BLOCK_M // 2
    tiles_m = gl.cdiv(M, BLOCK_M)
    tiles_n = gl.cdiv(N, BLOCK_N)
    k_steps = gl.cdiv(K, BLOCK_K)
    fill = 0  # buffers filled so far: the ring's position
    for tile in range(gl.program_id(0), tiles_m * tiles_n, NUM_SMS):
        row, col = _tile_origin(tile, tiles_m, tiles_n, BLOCK_M, BLOCK_N, GROUP_M)
        for k_step in range(k_steps):
            slot = fill % STAGES
            # wait until both groups have read this buffer's last fill (a new one passes)
            mbarrier.wait(empty.index(slot), ((fill // STAGES) & 1) ^ 1)
            bar = ready.index(slot)
            mbarrier.expect(bar, 2 * a_desc.block_type.nbytes + b_desc.block_type.nbytes)
            k = k_step * BLOCK_K
            for half in gl.static_range(2):
                if A_COLUMN_MAJOR:  # A's memory is K x M
                    tma.async_copy_global_to_shared(a_desc, [k, row + half * HALF_M], bar,
                                                    a_bufs.index(2 * slot + half))
                else:
                    tma.async_copy_global_to_shared(a_desc, [row + half * HALF_M, k], bar,
                                                    a_bufs.index(2 * slot + half))
            if B_COLUMN_MAJOR:  # B's memory is N x K
                tma.async_copy_global_to_shared(b_desc, [col, k], bar, b_bufs.index(slot))
            else:
                tma.async_copy_global_to_shared(b_desc, [k, col], bar, b_bufs.index(slot))
            fill += 1


@gluon.jit
def _consumer(c_desc, a_bufs, b_bufs, c_buf, ready, empty, M, N, K, HALF: gl.constexpr,
              BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
              GROUP_M: gl.constexpr, STAGES: gl.constexpr, NUM_SMS: gl.constexpr,
              A_COLUMN_MAJOR: gl.constexpr, B_COLUMN_MAJOR: gl.constexpr):  # fmt: skip
    # one warp group: rows HALF * BLOCK_M / 2 onwards of every tile of this program; the right
    # piece of each tile's half is stored while the next tile's first MMA runs
    HALF_M: gl.constexpr = BLOCK_M // 2
    PIECE_N: gl.constexpr = BLOCK_N // 2
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16])
    tiles_m = gl.cdiv(M, BLOCK_M)
    tiles_n = gl.cdiv(N, BLOCK_N)
    k_steps = gl.cdiv(K, BLOCK_K)
    first = gl.program_id(0)
    pieces = gl.permute(gl.reshape(gl.zeros((HALF_M, BLOCK_N), c_desc.dtype, acc_layout),
                                   [HALF_M, 2, PIECE_N]), [0, 2, 1])
    left, kept = gl.split(pieces)  # kept: the last tile's right piece, rounded
    kept_row = 0
    kept_col = 0
    fill = 0
    for tile in range(first, tiles_m * tiles_n, NUM_SMS):
        row, col = _tile_origin(tile, tiles_m, tiles_n, BLOCK_M, BLOCK_N, GROUP_M)
        acc = gl.zeros((HALF_M, BLOCK_N), gl.float32, acc_layout)
        for k_step in range(k_steps):
            slot = fill % STAGES
            mbarrier.wait(ready.index(slot), (fill // STAGES) & 1)
            a = a_bufs.index(2 * slot + HALF)
            if A_COLUMN_MAJOR:
                a = a.permute((1, 0))  # a transposed view of the tile: no copy
            b = b_bufs.index(slot)
            if B_COLUMN_MAJOR:
                b = b.permute((1, 0))
            acc = warpgroup_mma(a, b, acc, is_async=True)
            if k_step == 0 and tile != first:
                tma.store_wait(0)  # the left piece has left c_buf
                c_buf.store(kept)
                fence_async_shared()
                tma.async_copy_shared_to_global(c_desc, [kept_row, kept_col], c_buf)
            # at most this MMA in flight: the one before it is done, so its buffer is free
            acc, a, b = warpgroup_mma_wait(1, deps=(acc, a, b))
            mbarrier.arrive(empty.index((fill + STAGES - 1) % STAGES), pred=k_step > 0)
            fill += 1
        acc = warpgroup_mma_wait(0, deps=(acc,))
        mbarrier.arrive(empty.index((fill + STAGES - 1) % STAGES))
        pieces = gl.permute(gl.reshape(acc.to(c_desc.dtype), [HALF_M, 2, PIECE_N]), [0, 2, 1])
        left, kept = gl.split(pieces)
        tma.store_wait(0)  # the previous piece has left c_buf
        c_buf.store(left)
        fence_async_shared()  # the shared-memory writes, before the TMA unit reads them
        tma.async_copy_shared_to_global(c_desc, [row + HALF * HALF_M, col], c_buf)
        kept_row = row + HALF * HALF_M
        kept_col = col + PIECE_N
    tma.store_wait(0)
    c_buf.store(kept)  # every program has at least one tile
    fence_async_shared()
    tma.async_copy_shared_to_global(c_desc, [kept_row, kept_col], c_buf)
    tma.store_wait(0)


@gluon.jit
def _matmul_cooperative_kernel(a_desc, b_desc, c_desc, GROUP_M: gl.constexpr,
                               STAGES: gl.constexpr, NUM_SMS: gl.constexpr,
                               A_COLUMN_MAJOR: gl.constexpr,
                               B_COLUMN_MAJOR: gl.constexpr):  # fmt: skip
    # C = A @ B in 256 x 128 tiles, one program an SM, each A row panel read once per tile
    # column and each B column panel once per tile row (L2 serves the repeats)
    dtype: gl.constexpr = c_desc.dtype
    M = c_desc.shape[0]
    N = c_desc.shape[1]
    if A_COLUMN_MAJOR:
        BLOCK_M: gl.constexpr = 2 * a_desc.block_type.shape[1]  # the tile: two groups' halves
        BLOCK_K: gl.constexpr = a_desc.block_type.shape[0]
        K = a_desc.shape[0]
    else:
        BLOCK_M: gl.constexpr = 2 * a_desc.block_type.shape[0]
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
                     A_COLUMN_MAJOR, B_COLUMN_MAJOR)),
        (_consumer, (c_desc, a_bufs, b_bufs, c_bufs.index(1), ready, empty, M, N, K, 1,
                     BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, STAGES, NUM_SMS,
                     A_COLUMN_MAJOR, B_COLUMN_MAJOR)),
        (_producer, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, M, N, K,
                     BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, STAGES, NUM_SMS,
                     A_COLUMN_MAJOR, B_COLUMN_MAJOR)),
    ], [4, 1], [232, 40])  # the workers' warps and registers: a consumer group, the producer


# --------------------------------------------------------------------------- launcher


def ready(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether :func:`matmul` takes ``a @ b`` here: ``pingpong.ready``, the Hopper kernels'
    one rule (a patch of that function, as a script that times the tile-language kernel on
    Hopper makes, turns both off)."""
    return pingpong.ready(a, b)


def _descriptors(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> dict:
    bm, bn, bk = HALF["BLOCK_M"], HALF["BLOCK_N"], HALF["BLOCK_K"]
    return {"a_desc": _descriptor(a, (bm, bk)), "b_desc": _descriptor(b, (bk, bn)),
            "c_desc": _descriptor(c, (bm, PIECE_N))}  # fmt: skip


def _constexprs(a: torch.Tensor, b: torch.Tensor, sms: int) -> dict:
    return dict(GROUP_M=GROUP_M, STAGES=STAGES, NUM_SMS=sms, A_COLUMN_MAJOR=_column_major(a),
                B_COLUMN_MAJOR=_column_major(b))  # fmt: skip


_LAUNCH = Launcher(_matmul_cooperative_kernel)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``C = A @ B`` through the cooperative kernel; the caller has checked :func:`ready`.

    The launch goes through ``launch.Launcher``, keyed by the operands' dtype and orientation:
    all that the descriptors specialize on (their block and layout follow from those two), so
    a repeat call skips Triton's binding and its per-argument specialization."""
    m, n = a.shape[0], b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    sms = _sm_count(a.device)
    tiles = triton.cdiv(m, TILE_M) * triton.cdiv(n, HALF["BLOCK_N"])
    descriptors = _descriptors(a, b, c)
    constexprs = _constexprs(a, b, sms)
    _LAUNCH((min(sms, tiles),), tuple(descriptors.values()), replay=False,
            signature_key=(a.dtype, constexprs["A_COLUMN_MAJOR"], constexprs["B_COLUMN_MAJOR"]),
            **constexprs, num_warps=NUM_WARPS, maxnreg=MAXNREG)  # fmt: skip
    return c


def compile_for_hopper(dtype: torch.dtype = torch.float16, a_column_major: bool = False,
                       b_column_major: bool = False):  # fmt: skip
    """Compile the kernel for compute capability 9.0 on this machine, GPU or not, and return
    Triton's ``CompiledKernel`` (what the CPU tests inspect)."""
    bm, bn, bk = HALF["BLOCK_M"], HALF["BLOCK_N"], HALF["BLOCK_K"]
    a, b, c = operands_for_compiling(dtype, a_column_major, b_column_major, (bm, bk), (bk, bn))
    return compile_gluon_for_hopper(_matmul_cooperative_kernel, _descriptors(a, b, c),
                                    _constexprs(a, b, 132))  # fmt: skip
