"""The 16-bit GEMM's Hopper fast path: a "ping-pong" kernel, written in Gluon.

``matmul.py``'s persistent kernel, written in Triton's tile language, is one software
pipeline: the same 8 warps issue the loads, the MMAs and, once a tile, the epilogue (wait for
the last MMA, round the fp32 accumulator to 16 bits, write it to shared memory, hand it to the
TMA unit). The tensor cores idle through every epilogue. Under Nsight Compute on the H200
(``results/h200/ncu-gemm-*.log``) that kernel kept the tensor pipe busy 71.0% of the time at
16384 x 1024 x 1024, where a tile is only 16 steps of K, against cuBLAS's 75.1%; at 4096^3
88.1% against 90.3%. Those ratios are the two kernels' time ratios (0.953 and 0.981 there).

The tile language has no way to give two groups of warps different tiles. Gluon, the
lower-level language that ships in the same package (``triton.experimental.gluon``), does:
the programmer chooses each tensor's layout, allocates shared memory, places mbarriers, and
splits the warps into partitions that run different code. This kernel is the *ping-pong*
schedule of Hopper GEMM libraries:

* **one producer warp** issues every TMA load of the program's tiles, in order, into a ring
  of ``STAGES`` shared-memory buffers, each with two mbarriers: *ready* (the TMA unit
  arrives when the bytes have arrived) and *empty* (the consumer arrives when its MMA has
  read them);
* **two consumer warp groups** (4 warps each) take the program's tiles in turn, the first the
  even ones and the second the odd ones. Each multiplies its 128 x 128 tile with
  asynchronous wgmma, one in flight (``warpgroup_mma`` then ``warpgroup_mma_wait(1)``: the
  MMA before it is done, so its buffer is freed), then rounds and stores its tile through
  its own shared buffer and a TMA store;
* **a turn barrier** between the two groups: a group starts its tile's MMAs once the other
  has issued all of the previous tile's. So one group's epilogue runs while the other's MMAs
  do, and the tensor cores see the tiles back to back. It is also what makes the ring safe:
  waits on a buffer are by the parity of its fill count, and a group that ran a whole tile
  ahead would wait on a buffer two fills early, when the parity reads as done. (The first
  version on the H200 had no turn barrier: correct on small products, a launch failure at
  16384 x 1024 x 1024.)

Every load and store is a tensor descriptor (TMA: zero-filled edges, clipped stores), so any
M, N, K work, and a transposed operand is its memory described as it lies, the tile
transposed in shared memory (``permute``) for the MMA. The sizes are read from the
descriptors at run time: a new M (or N, or K) never compiles.

Measured on the H200 (``results/h200/gemm-pingpong.log``, interleaved graph replay): 1.059x
``torch.mm`` at 16384 x 1024 x 1024 fp16 (the tile-language kernel 0.979x in the same run),
1.012x at 4096^3 fp16 (0.976x), 1.037x at 8192^3 bf16 (1.004x). ``results/NOTES.md`` has the
kernel-bench records.

What it needs, checked by :func:`ready` (``matmul.py`` falls back to its own kernels
otherwise): a compiled Hopper GPU (compute capability 9.0; Gluon has no interpreter, so the
CPU runs the tile-language kernels), float16 or bfloat16, each operand row-major or a
transposed view with rows that start on 16-byte boundaries, and a C whose rows do too (N a
multiple of 8).
"""

from __future__ import annotations

import functools

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
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from learning.runtime import interpreting

TILE = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64)  # one consumer group's C tile, one K step
STAGES = 5  # ring buffers: 5 x (128 x 64 + 64 x 128) x 2 bytes = 160 KiB, + 2 x 32 KiB for C
GROUP_M = 16  # tile rows per super-row of the grouped order (matmul.py's persistent kernel's)
MAXNREG = 168  # registers a thread: 65536 over 12 warps (the 9 used, rounded to warp groups)
NUM_WARPS = 4  # the default partition: the first consumer group


@gluon.jit
def _tile_origin(tile, tiles_m, tiles_n, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                 GROUP_M: gl.constexpr):  # fmt: skip
    # the grouped order of matmul.py's kernels: super-rows of GROUP_M tile rows
    tiles_per_group = GROUP_M * tiles_n
    first_tile_m = (tile // tiles_per_group) * GROUP_M
    group_rows = min(tiles_m - first_tile_m, GROUP_M)
    row = (first_tile_m + (tile % tiles_per_group) % group_rows) * BLOCK_M
    col = ((tile % tiles_per_group) // group_rows) * BLOCK_N
    return row, col


@gluon.jit
def _producer(a_desc, b_desc, a_bufs, b_bufs, ready, empty, M, N, K,
              BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
              GROUP_M: gl.constexpr, STAGES: gl.constexpr, NUM_SMS: gl.constexpr,
              A_COLUMN_MAJOR: gl.constexpr, B_COLUMN_MAJOR: gl.constexpr):  # fmt: skip
    # one warp: every load of this program's tiles, in order, into the ring
    tiles_m = gl.cdiv(M, BLOCK_M)
    tiles_n = gl.cdiv(N, BLOCK_N)
    k_steps = gl.cdiv(K, BLOCK_K)
    fill = 0  # buffers filled so far: the ring's position
    for tile in range(gl.program_id(0), tiles_m * tiles_n, NUM_SMS):
        row, col = _tile_origin(tile, tiles_m, tiles_n, BLOCK_M, BLOCK_N, GROUP_M)
        for k_step in range(k_steps):
            slot = fill % STAGES
            # wait until this buffer's last reader is done (a new barrier passes parity 1)
            mbarrier.wait(empty.index(slot), ((fill // STAGES) & 1) ^ 1)
            bar = ready.index(slot)
            mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
            k = k_step * BLOCK_K
            if A_COLUMN_MAJOR:  # A's memory is K x M
                tma.async_copy_global_to_shared(a_desc, [k, row], bar, a_bufs.index(slot))
            else:
                tma.async_copy_global_to_shared(a_desc, [row, k], bar, a_bufs.index(slot))
            if B_COLUMN_MAJOR:  # B's memory is N x K
                tma.async_copy_global_to_shared(b_desc, [col, k], bar, b_bufs.index(slot))
            else:
                tma.async_copy_global_to_shared(b_desc, [k, col], bar, b_bufs.index(slot))
            fill += 1


@gluon.jit
def _consumer(c_desc, a_bufs, b_bufs, c_buf, ready, empty, turn, M, N, K, GROUP: gl.constexpr,
              BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
              GROUP_M: gl.constexpr, STAGES: gl.constexpr, NUM_SMS: gl.constexpr,
              A_COLUMN_MAJOR: gl.constexpr, B_COLUMN_MAJOR: gl.constexpr):  # fmt: skip
    # one warp group: every other tile of this program (GROUP 0 the even ones, 1 the odd)
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16])
    tiles_m = gl.cdiv(M, BLOCK_M)
    tiles_n = gl.cdiv(N, BLOCK_N)
    k_steps = gl.cdiv(K, BLOCK_K)
    nth = GROUP  # the program's tiles before this one
    for tile in range(gl.program_id(0) + GROUP * NUM_SMS, tiles_m * tiles_n, 2 * NUM_SMS):
        row, col = _tile_origin(tile, tiles_m, tiles_n, BLOCK_M, BLOCK_N, GROUP_M)
        # Take turns: start once the other group has issued the previous tile's MMAs.
        mine = nth // 2  # this group's tiles before this one
        if GROUP == 0:
            mbarrier.wait(turn.index(0), (mine + 1) & 1, pred=mine > 0)
        else:
            mbarrier.wait(turn.index(1), mine & 1)
        fill = nth * k_steps  # the ring position of this tile's first buffer
        acc = gl.zeros((BLOCK_M, BLOCK_N), gl.float32, acc_layout)
        for k_step in range(k_steps):
            slot = fill % STAGES
            mbarrier.wait(ready.index(slot), (fill // STAGES) & 1)
            a = a_bufs.index(slot)
            if A_COLUMN_MAJOR:
                a = a.permute((1, 0))  # a transposed view of the tile: no copy
            b = b_bufs.index(slot)
            if B_COLUMN_MAJOR:
                b = b.permute((1, 0))
            acc = warpgroup_mma(a, b, acc, is_async=True)
            # at most this MMA in flight: the one before it is done, so its buffer is free
            acc, a, b = warpgroup_mma_wait(1, deps=(acc, a, b))
            mbarrier.arrive(empty.index((fill + STAGES - 1) % STAGES), pred=k_step > 0)
            fill += 1
        mbarrier.arrive(turn.index(1 - GROUP))  # the other group's turn
        acc = warpgroup_mma_wait(0, deps=(acc,))
        mbarrier.arrive(empty.index((fill + STAGES - 1) % STAGES))
        # the epilogue, under the other group's MMAs
        tma.store_wait(0)  # this group's previous tile has left c_buf
        c_buf.store(acc.to(c_desc.dtype))
        fence_async_shared()  # the shared-memory writes, before the TMA unit reads them
        tma.async_copy_shared_to_global(c_desc, [row, col], c_buf)
        nth += 2
    tma.store_wait(0)


@gluon.jit
def _matmul_pingpong_kernel(a_desc, b_desc, c_desc, GROUP_M: gl.constexpr, STAGES: gl.constexpr,
                            NUM_SMS: gl.constexpr, A_COLUMN_MAJOR: gl.constexpr,
                            B_COLUMN_MAJOR: gl.constexpr):  # fmt: skip
    # C = A @ B: each A row panel read once per tile column, each B column panel once per
    # tile row (L2 serves the repeats), C written once
    dtype: gl.constexpr = c_desc.dtype
    BLOCK_M: gl.constexpr = c_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = c_desc.block_type.shape[1]
    M = c_desc.shape[0]
    N = c_desc.shape[1]
    if A_COLUMN_MAJOR:
        BLOCK_K: gl.constexpr = a_desc.block_type.shape[0]
        K = a_desc.shape[0]
    else:
        BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
        K = a_desc.shape[1]
    a_bufs = gl.allocate_shared_memory(dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_bufs = gl.allocate_shared_memory(dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
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
                     BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, STAGES, NUM_SMS,
                     A_COLUMN_MAJOR, B_COLUMN_MAJOR)),
        (_consumer, (c_desc, a_bufs, b_bufs, c_bufs.index(1), ready, empty, turn, M, N, K, 1,
                     BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, STAGES, NUM_SMS,
                     A_COLUMN_MAJOR, B_COLUMN_MAJOR)),
        (_producer, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, M, N, K,
                     BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, STAGES, NUM_SMS,
                     A_COLUMN_MAJOR, B_COLUMN_MAJOR)),
    ], [4, 1], [232, 40])  # the workers' warps and registers: a consumer group, the producer


# --------------------------------------------------------------------------- launcher

_GLUON_DTYPES = {torch.float16: gl.float16, torch.bfloat16: gl.bfloat16}


@functools.lru_cache(maxsize=32)
def _shared_layout(block: tuple[int, int], dtype: torch.dtype):
    return gl.NVMMASharedLayout.get_default_for(list(block), _GLUON_DTYPES[dtype])


def _column_major(t: torch.Tensor) -> bool:
    return t.stride(1) != 1


def _aligned(t: torch.Tensor) -> bool:
    """Rows (of the memory as it lies) that start on 16-byte boundaries: what TMA needs."""
    if 1 not in t.stride() or t.data_ptr() % 16:
        return False
    outer = t.stride(1) if _column_major(t) else t.stride(0)
    return t.stride(0 if _column_major(t) else 1) == 1 and (outer * t.element_size()) % 16 == 0


@functools.lru_cache(maxsize=8)
def _hopper(device: torch.device) -> bool:
    return torch.cuda.get_device_capability(device) == (9, 0)


def suits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether the kernel can take ``a @ b`` as laid out: float16 or bfloat16, every size
    positive, each operand row-major or a transposed view with 16-byte-aligned rows, and N a
    multiple of 8 (C's rows aligned too)."""
    return (
        a.dtype in _GLUON_DTYPES
        and b.shape[1] % 8 == 0
        and min(a.shape[0], a.shape[1], b.shape[1]) > 0
        and _aligned(a)
        and _aligned(b)
    )


def ready(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether :func:`matmul` takes ``a @ b`` here: it :func:`suits` the kernel, on a compiled
    GPU of compute capability 9.0 (Hopper: the H100, the H200)."""
    return not interpreting() and a.is_cuda and suits(a, b) and _hopper(a.device)


@functools.lru_cache(maxsize=8)
def _sm_count(device: torch.device) -> int:
    return torch.cuda.get_device_properties(device).multi_processor_count


def _descriptor(t: torch.Tensor, block: tuple[int, int]) -> TensorDescriptor:
    """A TMA descriptor of ``t``'s memory as it lies (a transposed view: its transpose), moving
    ``block`` tiles of it. Built here and passed to the kernel by value. A version of the
    kernel that built its descriptors on the device, from pointers, took less host time a
    call (31-37 us at 1024^3 against torch.mm's 12) but ran 0.98-1.00x torch.mm at
    16384 x 1024 x 1024 where this one runs 1.04-1.06x (``results/h200/gemm-pingpong-
    variants.log``, ``gemm-pingpong-device-descriptors.log``)."""
    memory = t.T if _column_major(t) else t
    if _column_major(t):
        block = block[::-1]
    return TensorDescriptor.from_tensor(memory, list(block), _shared_layout(block, t.dtype))


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``C = A @ B`` through the ping-pong kernel; the caller has checked :func:`ready`."""
    m, n = a.shape[0], b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    bm, bn, bk = TILE["BLOCK_M"], TILE["BLOCK_N"], TILE["BLOCK_K"]
    sms = _sm_count(a.device)
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    _matmul_pingpong_kernel[(min(sms, tiles),)](
        _descriptor(a, (bm, bk)), _descriptor(b, (bk, bn)), _descriptor(c, (bm, bn)),
        GROUP_M=GROUP_M, STAGES=STAGES, NUM_SMS=sms,
        A_COLUMN_MAJOR=_column_major(a), B_COLUMN_MAJOR=_column_major(b),
        num_warps=NUM_WARPS, maxnreg=MAXNREG,
    )  # fmt: skip
    return c


def compile_for_hopper(dtype: torch.dtype = torch.float16, a_column_major: bool = False,
                       b_column_major: bool = False):  # fmt: skip
    """Compile the kernel for compute capability 9.0 on this machine, GPU or not (Triton ships
    its own ``ptxas``), and return Triton's ``CompiledKernel``: what the CPU tests inspect
    (warps, shared memory, the PTX, the cubin)."""
    bm, bn, bk = TILE["BLOCK_M"], TILE["BLOCK_N"], TILE["BLOCK_K"]
    a, b, c = operands_for_compiling(dtype, a_column_major, b_column_major, (bm, bk), (bk, bn))
    descriptors = {"a_desc": _descriptor(a, (bm, bk)), "b_desc": _descriptor(b, (bk, bn)),
                   "c_desc": _descriptor(c, (bm, bn))}  # fmt: skip
    constexprs = dict(GROUP_M=GROUP_M, STAGES=STAGES, NUM_SMS=132,
                      A_COLUMN_MAJOR=a_column_major, B_COLUMN_MAJOR=b_column_major)  # fmt: skip
    return compile_gluon_for_hopper(_matmul_pingpong_kernel, descriptors, constexprs)


def operands_for_compiling(dtype: torch.dtype, a_column_major: bool, b_column_major: bool,
                           a_block: tuple[int, int], b_block: tuple[int, int]):  # fmt: skip
    """CPU stand-ins of A, B and C, one block each, laid out as asked (row-major or a
    transposed view): what a descriptor's compile-time signature is made from."""
    a = torch.empty(a_block[::-1] if a_column_major else a_block, dtype=dtype)
    b = torch.empty(b_block[::-1] if b_column_major else b_block, dtype=dtype)
    c = torch.empty((a_block[0], b_block[1]), dtype=dtype)
    return (a.T if a_column_major else a), (b.T if b_column_major else b), c


def compile_gluon_for_hopper(kernel, descriptors: dict, constexprs: dict):
    """``kernel`` (a Gluon GEMM of this module's options: three descriptors, then compile-time
    values) compiled for sm_90 by Triton's own ``ptxas``, with no GPU."""
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import BaseBackend, GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    signature = {name: native_specialize_impl(BaseBackend, descriptor, False, True, True)[0]
                 for name, descriptor in descriptors.items()}  # fmt: skip
    signature |= {name: "constexpr" for name in constexprs}
    names = list(signature)
    source = GluonASTSource(kernel, signature, constexprs={
        (names.index(name),): value for name, value in constexprs.items()})  # fmt: skip
    options = {"num_warps": NUM_WARPS, "maxnreg": MAXNREG}
    return triton.compile(source, target=GPUTarget("cuda", 90, 32), options=options)
