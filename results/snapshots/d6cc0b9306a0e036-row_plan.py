"""The row plan: how every row kernel (sum, max, softmax, RMSNorm) cuts a 2-D tensor into programs.

A row kernel reads an ``M x N`` tensor row by row. Three decisions decide how fast it streams,
and they are the same for every row op, so they are made here, once, by one plain function:

1. **How many columns a program handles per step** (``block_cols``, a power of two because
   ``tl.arange`` needs one). Either the whole row (``next_power_of_two(N)``, masked at the end),
   or a fixed chunk that a loop walks along the row (``chunked=True``).
2. **How many rows a program handles** (``rows_per_program``). A narrow row (128 fp16 values
   are 256 bytes) is far too little work for a program: with one row per program, 65536 rows
   launch 65536 programs that each issue two 16-byte loads per thread and wait. That design
   reached 0.80 TB/s on the H200 where ``torch.compile`` reached 3.35. Handling several rows as
   one ``[rows_per_program, block_cols]`` block gives each program a tile of ~4 KiB.
3. **How many warps** (``num_warps``): enough threads that each holds about two 16-byte
   vectors of the tile. Too few warps and every thread carries a long row in registers (they
   spill); too many and the tile is spread so thin that a thread has one small load in flight.

The rule, step by step (the constants below carry the numbers):

* ``vector = 16 // element_size`` elements make one 16-byte load (8 fp16/bf16, 4 fp32).
  Every block is a power of two of at least ``vector`` elements, so rows whose stride is a
  multiple of 16 bytes are read with 128-bit loads.
* **One pass** (``passes=1``: sum, max; the kernel reads each element once whatever the plan):
  a row up to ``CHUNK_BYTES`` (16 KiB) is one block; a wider row is walked in 16 KiB chunks.
  The loop costs no extra traffic and keeps registers low, so many programs fit on an SM.
* **Several passes** (``passes=2``: softmax needs the row's max and sum before it can write;
  RMSNorm needs the sum of squares): a chunked kernel would read the row ``passes`` times
  (the later reads hit L2 only while every row in flight fits in it), so the whole row stays
  in registers for as long as it fits: up to ``MAX_ROW_VALUES`` fp32 values per row (32 warps
  x 32 threads x 32 values: a thread may use at most 64 registers when a program has 1024
  threads), and while each thread holds at most ``THREAD_LIVE_BYTES`` (256 bytes: 64
  registers) of stored values over all the rows the kernel keeps live (``live_rows``). Wider
  rows are chunked, in ``REREAD_CHUNK_BYTES`` (32 KiB) steps by one fat 32-warp program per
  SM: few programs means few rows in flight (132 rows of 64 KiB are 8 MiB), so the second
  read of each row is an L2 hit, not a DRAM read.
* **Narrow rows**: ``rows_per_program`` is the largest power of two that keeps the tile within
  ``TILE_BYTES`` (4 KiB): 16 rows of 128 fp16 values, 2 rows of 1024, 1 row of 2048 or more.
  The rule used 8 KiB tiles first; timing every plan on a grid of row counts x widths
  (``scripts/row_plan_grid.py``) showed 4 KiB tiles with 4 warps winning at 781-1024-wide rows
  (8 KiB tiles lost up to 30% at 8192 x 781), and scoring both rules on the same timings gave
  4 KiB a worst loss of 9% (softmax), 7% (sum) and 7% (softmax backward) against 24-30%.
* ``num_warps`` = tile elements x streams / (32 threads x 2 vectors; 1 in a chunked walk:
  see below), clamped to [4, 32], and to ``32 / live_rows`` (a power of two) when a kernel
  keeps several rows live: fewer threads get more registers each (a 16-warp program may give
  a thread 128), which the extra rows need. Measured on the H200, the 4096 x 32768 fp16
  softmax backward took 0.258 ms chunked (32 warps), 0.215 ms as one whole row with 32 warps
  and 0.202 ms with 16.
* ``streams``: a kernel that loads several input rows per row it computes (the RMSNorm
  forward loads x and residual) counts the vectors of all of them, so each thread still holds
  about two per stream. Timed over the plan grid (``row-plan-grid-rmsnorm.log``, two runs), the
  RMSNorm forward with twice the warps was faster at every 16-byte-aligned width (128: 14-16%,
  1024: 2-6%, 4096: ~1%) and its rule's median loss fell from 1.011-1.015 to 1.000; at 781
  (rows not 16-byte aligned, so no vector loads) the extra warps cost 15%, so an unaligned row
  counts one stream.
* **Several input rows, each wider than** ``STREAM_ROW_BYTES`` (16 KiB): the kernel does not
  keep them in registers at all. It walks the row as one chunk of up to ``MAX_ROW_VALUES``
  values, reduces, and reads the chunk again for the second pass, from L2 (one 32-warp
  program per SM: 132 rows of 2 x 128 KiB in flight are 33 MiB). Holding both rows, their
  sum and the weight across the reduction needs more than a thread's 64 registers. Timed on
  the H200 (``row-chunk-rmsnorm-*.log``), the whole-row plan was 19% slower at 4096 x 32768
  fp32 and 4-11% slower at 8192 x 16384 in every dtype; the one-chunk plan was the fastest
  plan, or within 1.5% of it, at 32768 and 16384 wide. torch.compile's autotuner picks the
  same shape of kernel (one 32768-value chunk, 32 warps, in fp32).
* ``num_stages`` is 1. It asks Triton's software pipeliner to issue a chunk loop's next
  loads before the current chunk is consumed; on the H200 every chunked candidate ran slower
  with 2 stages than with 1 (the 4096 x 32768 fp16 row sum: 0.065 ms against 0.060 ms): the
  extra buffers cost occupancy, and the independent loads of one step already overlap.

Worked examples (fp16): 16384 x 4096 -> one 4096-wide row per program, 8 warps (16 values a
thread). 65536 x 128 -> 16 rows of 128 per program (4 KiB), 4 warps, 4096 programs.
4096 x 32768 softmax -> the whole row, 32 warps (32 values a thread); the same shape's row
sum walks 8192-wide chunks with 32 warps; its softmax backward (two live rows, 128 KiB of
fp16) keeps the whole row with 16 warps. In fp32 the backward's two rows are 256 KiB: it
walks 8192-wide chunks with 32 warps.

The plan depends on the row *width* and the dtype only, never on the row count (``n_rows`` is
accepted, and deliberately unused): the kernels take ``block_cols``, ``rows_per_program`` and
``N`` as ``tl.constexpr`` (one compiled variant per width) and the row count as a runtime
argument, so a new batch size does not compile again (one exception: the RMSNorm forward's
row mask is a compile-time switch that depends on the row count, so it may compile a second
binary for a width; ``rmsnorm._mask_rows``). The price is that a small tensor of narrow
rows launches few programs (1024 x 128 fp16: 32 programs), which matters little: such a kernel
is over in a few microseconds whatever the plan.

This module also holds the input checks every row launcher shares, so each reports a bad input
in the same one line.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

VECTOR_BYTES = 16  # one 128-bit load or store per thread
VECTORS_PER_THREAD = 2  # 16-byte vectors each thread holds per step
CHUNK_BYTES = 16 * 1024  # a one-pass kernel walks rows wider than this in chunks this size
REREAD_CHUNK_BYTES = 32 * 1024  # a multi-pass kernel's chunk, walked by a 32-warp program
TILE_BYTES = 4 * 1024  # narrow rows are stacked until a program's tile reaches this size
MAX_ROW_VALUES = 32 * 32 * 32  # fp32 values of one row a program can keep in registers
STREAM_ROW_BYTES = 16 * 1024  # a kernel loading several input rows chunks rows wider than this
THREAD_LIVE_BYTES = 256  # stored bytes of all live rows one thread of a whole-row program keeps
MIN_WARPS, MAX_WARPS = 4, 32

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


@dataclass(frozen=True)
class RowPlan:
    """How a row kernel is launched; every field is a compile-time constant of the kernel."""

    block_cols: int  # power of two >= min(n_cols, chunk); columns one program handles per step
    rows_per_program: int  # >1 for narrow rows: several rows per program as a 2-D block
    num_warps: int
    chunked: bool  # True: loop over the row in chunks of block_cols (wide rows)
    num_stages: int = 1

    def __post_init__(self):
        for name in ("block_cols", "rows_per_program"):
            value = getattr(self, name)
            if value < 1 or value & (value - 1):
                raise ValueError(f"RowPlan: {name} must be a power of two, got {value}")
        if self.num_warps not in (1, 2, 4, 8, 16, 32) or self.num_stages < 1:
            raise ValueError(f"RowPlan: num_warps {self.num_warps} / num_stages {self.num_stages}")

    def check_covers(self, n_cols: int, op: str) -> None:
        """A kernel that keeps the whole row in registers needs ``block_cols >= n_cols``."""
        if not self.chunked and self.block_cols < n_cols:
            raise ValueError(
                f"{op}: a plan with block_cols={self.block_cols} < {n_cols} columns must be chunked"
            )

    def grid(self, n_rows: int) -> tuple[int]:
        """One program per ``rows_per_program`` rows."""
        return (-(-n_rows // self.rows_per_program),)


def next_power_of_two(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def _power_of_two_at_most(n: int) -> int:
    return 1 << (max(1, n).bit_length() - 1)


@functools.lru_cache(maxsize=1024)
def choose_row_plan(
    n_rows: int,
    n_cols: int,
    element_size: int,
    *,
    passes: int = 1,
    live_rows: int = 1,
    tile_bytes: int = TILE_BYTES,
    streams: int = 1,
) -> RowPlan:
    """The plan for an ``n_rows x n_cols`` row kernel whose elements are ``element_size`` bytes.

    ``passes`` is how many times a chunked kernel would have to read each row (1 for a plain
    reduction, 2 for softmax or RMSNorm). ``live_rows`` is how many row-sized tensors the kernel
    keeps in registers at once (the softmax backward keeps ``y`` and ``dy``: 2). ``tile_bytes``
    is how far rows narrower than ``TILE_BYTES`` are stacked (a kernel with per-program
    overhead, like the RMSNorm backward's partial dweight rows, asks for more). ``streams`` is
    how many input rows the kernel loads for each row it computes (the RMSNorm forward loads
    x and residual: 2); warps are counted for all of them. ``n_rows`` is checked but does not
    change the plan, so that a new row count never triggers a compile.
    """
    if (
        n_rows < 0
        or n_cols < 1
        or element_size not in (1, 2, 4, 8)
        or passes < 1
        or live_rows < 1
        or tile_bytes < TILE_BYTES
        or streams < 1
    ):
        raise ValueError(
            f"no row plan for {n_rows} x {n_cols} with {element_size}-byte elements, "
            f"passes={passes}, live_rows={live_rows}, tile_bytes={tile_bytes}, streams={streams}"
        )
    vector = max(1, VECTOR_BYTES // element_size)
    row_block = max(vector, next_power_of_two(n_cols))
    if passes == 1:
        chunk = CHUNK_BYTES // element_size
        chunked = row_block > chunk
    else:
        chunk = REREAD_CHUNK_BYTES // element_size
        # the most threads a whole-row program may have; each thread holds its share of the rows
        threads = 32 * _power_of_two_at_most(MAX_WARPS // live_rows)
        thread_bytes = live_rows * row_block * element_size // threads
        chunked = row_block > MAX_ROW_VALUES or thread_bytes > THREAD_LIVE_BYTES
        if streams > 1 and row_block * element_size > STREAM_ROW_BYTES:
            # several wide input rows: read them, reduce, reread them from L2 in one chunk
            chunked, chunk = True, MAX_ROW_VALUES
    block_cols = min(chunk, row_block) if chunked else row_block

    rows_per_program = 1
    row_bytes = block_cols * element_size
    if not chunked and row_bytes < TILE_BYTES:
        rows_per_program = _power_of_two_at_most(tile_bytes // row_bytes)

    tile = rows_per_program * block_cols
    if (n_cols * element_size) % VECTOR_BYTES:  # unaligned rows: no 16-byte loads, and extra
        streams = 1  # warps only add masked lanes (RMSNorm at 781 wide: 15% slower with them)
    # a whole tile: two vectors a thread; a chunk of a walk: one (32 warps for 16 KiB)
    vectors = 1 if chunked else VECTORS_PER_THREAD
    num_warps = tile * streams // (32 * vectors * vector)
    # whole rows held live by few threads need registers; stacked narrow rows hold 2 vectors each
    stacked = rows_per_program > 1
    most_warps = MAX_WARPS if chunked or stacked else _power_of_two_at_most(MAX_WARPS // live_rows)
    num_warps = min(most_warps, max(MIN_WARPS, num_warps))
    return RowPlan(
        block_cols=block_cols,
        rows_per_program=rows_per_program,
        num_warps=num_warps,
        chunked=chunked,
        num_stages=1,
    )


# --------------------------------------------------------------------------- input checks


def check_dtype(x: torch.Tensor, op: str, name: str = "x") -> None:
    if x.dtype not in SUPPORTED_DTYPES:
        supported = ", ".join(str(d).removeprefix("torch.") for d in SUPPORTED_DTYPES)
        got = str(x.dtype).removeprefix("torch.")
        raise TypeError(f"{op}: {name} has dtype {got}; supported: {supported}")


@functools.cache
def kernel_device() -> str:
    """``cuda`` when kernels are compiled, ``cpu`` under the interpreter: fixed for a process,
    since Triton reads ``TRITON_INTERPRET`` once, when it is imported."""
    from learning.runtime import default_device

    return default_device()


def check_device(x: torch.Tensor, op: str, name: str = "x") -> None:
    """Kernels run on CUDA when compiled and on the CPU under the interpreter."""
    expected = kernel_device()
    if x.device.type != expected:
        raise ValueError(f"{op}: {name} is on {x.device}; the kernels run on {expected} here")


def check_rows(x: object, op: str, name: str = "x") -> tuple[int, int]:
    """Validate a row kernel's 2-D input; return ``(n_rows, n_cols)`` or raise in one line."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{op}: {name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() != 2:
        raise ValueError(f"{op}: {name} must be 2-D (rows x columns), got shape {tuple(x.shape)}")
    check_dtype(x, op, name)
    check_device(x, op, name)
    n_rows, n_cols = x.shape
    if n_cols < 1:
        raise ValueError(f"{op}: {name} has no columns (shape {tuple(x.shape)})")
    if n_cols > 1 and x.stride(1) != 1:
        raise ValueError(
            f"{op}: {name}'s last dimension must be contiguous (stride 1), got strides "
            f"{tuple(x.stride())}; call .contiguous() first"
        )
    return n_rows, n_cols
