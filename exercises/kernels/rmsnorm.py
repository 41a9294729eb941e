# Your copy of reference/kernels/rmsnorm.py,
# made by scripts/make_exercises.py with the solution regions replaced by TODOs.
# This file is yours to edit; `python -m learning.check <exercise>` grades it.
# (Maintainers: edit the reference and rerun the script, never this copy.)
"""Residual RMSNorm, forward and backward: ``rmsnorm(x, residual, weight, eps=1e-6)``.

Spec: ``x`` and ``residual`` are ``M x N``, ``weight`` is ``(N,)``; all three share one dtype
(float16, bfloat16 or float32), and the last dimension of each is contiguous (any row
stride). The arithmetic is exact FP32 whatever the storage dtype::

    h = float32(x) + float32(residual)
    y = h * rsqrt(mean(h * h) + eps) * float32(weight)        # returned in x's dtype

Backward (``torch.autograd``): with ``rstd = rsqrt(mean(h*h) + eps)``, ``h_hat = h * rstd``
and ``g = dy * w``::

    dh = rstd * (g - h_hat * mean(g * h_hat))     # the gradient of x AND of residual
    dw = sum over rows of dy * h_hat

Logical bytes, as the registry counts them: forward ``(3 M N + N) * element_size`` (read x
and residual, write y, read the weight once); a training step ``(7 M N + 3 N) * element_size``
(forward as above; backward reads x, residual and dy and writes dx, plus the weight read
again and dweight written).

Design (what the lessons quote):

* **One fused kernel per direction.** The ~10 eager kernels of the PyTorch composition each
  stream the tensor; here the forward reads x and residual once and writes y once.
* **The shared row plan** (:mod:`reference.kernels.row_plan`, ``passes=2``): the sum of
  squares must be known before anything is written, so a row is kept in registers as long as
  it fits (``N`` up to 32768 values here); only wider rows are walked twice in chunks (the
  second read then comes from L2). Narrow rows are stacked ``ROWS`` to a program. The
  backward holds three rows a row and follows its own rule (``backward_plan``).
* **What backward needs is saved as one float per row.** Saving ``h`` (fp32, ``4 M N``
  bytes) would add a write in forward and a wider read in backward; saving ``rstd`` (``4 M``
  bytes) and re-reading x and residual costs exactly the logical count above, and recomputing
  ``h = x + residual`` is one add.
* **dweight is a column sum over all rows.** The backward kernel is persistent (about as many
  programs as the GPU runs at once, each looping over row blocks); each program adds its rows'
  ``dy * h_hat`` into an fp32 register tile and writes one partial row, and a second small
  kernel sums the partial rows. Atomics into one fp32 row would avoid the second launch, but
  the order of the additions (hence the low bits of dweight) would change from run to run;
  the partials cost ``programs x N x 4`` bytes (~2 MiB at N = 4096), about 0.2% of the step.
* **Rows too wide to hold split the backward in two** (``WHOLE_ROW_BACKWARD``): one kernel
  sums each row's ``dy * w * h``, a second walks 2-D tiles (a group of rows x a column
  tile) that write dx and keep their dweight sums in registers. It reads the rows twice from
  DRAM, where walking each row twice in one program read the second time from L2 but had to
  read and write back its partial row for every row: that design ran at 45% of the ceiling
  at 4096 x 32768 (results/NOTES.md).
* **The row count is a runtime argument, never specialized**; ``N`` and the plan are
  ``tl.constexpr``. A new batch size reuses the compiled kernels, but for the forward's row
  mask (``_mask_rows``), a switch on the row count: at most two binaries a width.
* The residual's gradient is the same tensor as x's: returned twice, computed once.
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from learning.runtime import interpreting
from reference.kernels.row_plan import (
    RowPlan,
    check_device,
    check_dtype,
    check_rows,
    choose_row_plan,
)

FORWARD_STREAMS = 2  # the forward loads two input rows (x, residual) per row it normalizes
# Live fp32 rows a backward program keeps per row: h, dy and the dweight accumulator.
BACKWARD_LIVE_ROWS = 3
# The backward stacks narrow rows to 16 KiB, not the shared 4 KiB: every program also writes a
# partial dweight row that a second kernel sums, so fewer, larger programs pay less for it.
# Measured on the H200 (results/h200/row-chunk-sweep.log), the 4 KiB plans lost 1.37x at
# 65536 x 128 and 1.61x at 1823 x 781 against 64 x 128 and 8 x 1024 tiles with 16 warps.
BACKWARD_TILE_BYTES = 16 * 1024
# The partial rows' sum: each program takes 32 columns (one 128-byte segment of every fp32
# partial row) and 64 partial rows a step. The sum waits on its loads once per step, so few,
# wide steps and many programs: 1024 columns and 128 partials are 32 programs of 2 steps,
# where 256-column, 16-row steps made 4 programs of 8 steps.
DWEIGHT_COLUMNS = 32
DWEIGHT_PARTIALS = 64
# Persistent backward: warps resident per SM that the grid aims for (occupancy, not a limit).
RESIDENT_WARPS_PER_SM = 16
# The widest row (values) the persistent backward holds whole, with 32 warps: 16 values a
# thread of h, dy, the weight and the dweight accumulator. At 32768 it spills (0.47x); at 16384
# it beat walking the row twice in chunks by 4% (results/h200/rmsnorm-wide-bwd-probe*.log).
WHOLE_ROW_BACKWARD = 16384
# Wider rows take two kernels: each row's sum of dy * w * h (one program a row, SPLIT_DOT_COLUMNS
# a step), then programs of SPLIT_GROUP_ROWS rows x SPLIT_TILE_COLUMNS columns that write dx and
# sum dweight over their rows in registers, SPLIT_TILE_ROWS rows a step. They read the rows
# twice from DRAM (seven passes for four), yet ran 1.20x the one persistent kernel at 4096 x
# 32768 fp16, whose partial row per program, read and written back for every row, spilled out
# of the L2 (results/NOTES.md).
SPLIT_DOT_COLUMNS = 4096
SPLIT_TILE_COLUMNS = 1024
SPLIT_TILE_ROWS = 8
SPLIT_GROUP_ROWS = 128
SPLIT_WARPS = 8
# Under the interpreter there is no SM count; a few programs exercise the persistent loop.
INTERPRETER_SM_COUNT = 4


@triton.jit(do_not_specialize=["n_rows"])
def _rmsnorm_fwd_kernel(
    x_ptr,  # *Pointer* to x, M x N, last dimension contiguous
    residual_ptr,  # *Pointer* to residual, M x N, last dimension contiguous
    weight_ptr,  # *Pointer* to the weight, N values, contiguous
    y_ptr,  # *Pointer* to the output y, M x N, contiguous, x's dtype
    rstd_ptr,  # *Pointer* to M fp32 values: 1/rms of each row, kept for backward (STORE_RSTD)
    n_rows,  # runtime: M (not specialized: a batch size reuses the binary of its MASK_ROWS)
    x_row_stride,  # elements between the starts of consecutive rows of x
    residual_row_stride,  # elements between the starts of consecutive rows of residual
    eps,  # added to mean(h*h) before the rsqrt
    N: tl.constexpr,  # row width; one compiled variant per width
    BLOCK: tl.constexpr,  # columns per step, a power of two (the whole row unless CHUNKED)
    ROWS: tl.constexpr,  # rows per program (>1 stacks narrow rows into one tile)
    CHUNKED: tl.constexpr,  # the row is wider than BLOCK: two passes over it
    STORE_RSTD: tl.constexpr,  # write rstd (only when a backward will follow)
    NUM_STAGES: tl.constexpr,  # software-pipelining depth of the chunk loops
    EVICT_ROWS: tl.constexpr,  # whole-row path: mark x and residual evict_first (streamed once)
    MASK_ROWS: tl.constexpr,  # mask by row too (False only if every program's rows exist)
):
    # read 2*M*N (x, residual) + N (weight, from L2 after the first programs); write M*N (y)
    # (+ M fp32 rstd). CHUNKED reads x and residual a second time, from L2 if rows are in flight.
    # TODO: h = x + residual in fp32; rstd = rsqrt(mean(h*h) + eps); store h * rstd * w
    pass


@triton.jit(do_not_specialize=["n_rows"])
def _rmsnorm_bwd_kernel(
    dy_ptr,  # *Pointer* to dy, the gradient of y, M x N, contiguous
    x_ptr,  # *Pointer* to x, M x N, last dimension contiguous (h is recomputed from it)
    residual_ptr,  # *Pointer* to residual, M x N, last dimension contiguous
    weight_ptr,  # *Pointer* to the weight, N values
    rstd_ptr,  # *Pointer* to the M fp32 values the forward saved
    dx_ptr,  # *Pointer* to dx, M x N, contiguous, x's dtype: the gradient of x and of residual
    partial_ptr,  # *Pointer* to (programs x N) fp32: row p is program p's sum of dy * h_hat
    n_rows,  # runtime: M (never specialized)
    x_row_stride,  # elements between consecutive rows of x
    residual_row_stride,  # elements between consecutive rows of residual
    N: tl.constexpr,  # row width; one compiled variant per width
    BLOCK: tl.constexpr,  # the row's power-of-two block (rows up to WHOLE_ROW_BACKWARD wide)
    ROWS: tl.constexpr,  # rows per step of a program
):
    # read 3*M*N (dy, x, residual) + N (weight) + M (rstd); write M*N (dx) + programs*N fp32.
    # TODO: a persistent loop over row blocks: dx = rstd * (g - h_hat * mean(g * h_hat)) with
    # TODO: g = dy * w; add dy * h_hat into this program's row of partial_ptr
    pass


@triton.jit
def _rmsnorm_bwd_dots_kernel(
    dy_ptr,  # *Pointer* to dy, M x N, contiguous
    x_ptr,  # *Pointer* to x, M x N, last dimension contiguous
    residual_ptr,  # *Pointer* to residual, M x N, last dimension contiguous
    weight_ptr,  # *Pointer* to the weight, N values
    dots_ptr,  # *Pointer* to M fp32 values: row i's sum of dy * w * h
    x_row_stride,  # elements between consecutive rows of x
    residual_row_stride,  # elements between consecutive rows of residual
    N: tl.constexpr,  # row width (wider than WHOLE_ROW_BACKWARD)
    BLOCK: tl.constexpr,  # columns per step of the walk along the row
):
    # wide rows, first of two kernels: one program a row; read 3*N (dy, x, residual) + N; write 1
    # TODO: walk this program's row in BLOCK-wide steps, summing dy * w * (x + residual) in
    # TODO: fp32; store the row's sum
    pass


@triton.jit(do_not_specialize=["n_rows"])
def _rmsnorm_bwd_tiles_kernel(
    dy_ptr,  # *Pointer* to dy, M x N, contiguous
    x_ptr,  # *Pointer* to x, M x N, last dimension contiguous
    residual_ptr,  # *Pointer* to residual, M x N, last dimension contiguous
    weight_ptr,  # *Pointer* to the weight, N values
    rstd_ptr,  # *Pointer* to the M fp32 values the forward saved
    dots_ptr,  # *Pointer* to the M fp32 sums of dy * w * h (_rmsnorm_bwd_dots_kernel)
    dx_ptr,  # *Pointer* to dx, M x N, contiguous, x's dtype
    partial_ptr,  # *Pointer* to (groups x N) fp32: row g is row group g's sum of dy * h_hat
    n_rows,  # runtime: M (never specialized)
    x_row_stride,  # elements between consecutive rows of x
    residual_row_stride,  # elements between consecutive rows of residual
    N: tl.constexpr,  # row width
    TILE: tl.constexpr,  # columns of a program (axis 1 of the grid)
    ROWS: tl.constexpr,  # rows per step
    GROUP_ROWS: tl.constexpr,  # rows of a program (axis 0 of the grid), a multiple of ROWS
):
    # wide rows, second kernel: a program owns GROUP_ROWS rows x TILE columns; read 3 of its
    # elements each (dy, x, residual) + TILE (weight) + 2 * GROUP_ROWS; write dx and TILE fp32
    # TODO: dx = rstd * (g - h_hat * dots * rstd / N) for each ROWS x TILE step of this
    # TODO: program's rows; sum dy * h_hat over them in registers; store one partial segment
    pass


@triton.jit(do_not_specialize=["n_partials"])
def _rmsnorm_dweight_kernel(
    partial_ptr,  # *Pointer* to (n_partials x N) fp32 partial sums, one row per program
    dweight_ptr,  # *Pointer* to dweight, N values, the weight's dtype
    n_partials,  # runtime: how many partial rows (follows the backward grid, hence M)
    N: tl.constexpr,  # row width
    BLOCK: tl.constexpr,  # columns per program
    PARTIALS: tl.constexpr,  # partial rows summed per step
):
    # read n_partials*N fp32 (L2-resident, just written); write N
    # TODO: each program sums its BLOCK columns over all partial rows, in fp32
    pass


# --------------------------------------------------------------------------- launchers


def _check_inputs(x, residual, weight, op: str = "rmsnorm") -> tuple[int, int]:
    """The one-line checks every launcher shares; returns ``(M, N)``."""
    n_rows, n_cols = check_rows(x, op, "x")
    if check_rows(residual, op, "residual") != (n_rows, n_cols):
        raise ValueError(
            f"{op}: residual has shape {tuple(residual.shape)}; x has {tuple(x.shape)}"
        )
    if not isinstance(weight, torch.Tensor):
        raise TypeError(f"{op}: weight must be a torch.Tensor, got {type(weight).__name__}")
    check_dtype(weight, op, "weight")
    check_device(weight, op, "weight")
    if weight.shape != (n_cols,):
        raise ValueError(
            f"{op}: weight has shape {tuple(weight.shape)}; expected ({n_cols},), one per column"
        )
    if weight.stride(0) != 1 and n_cols > 1:
        raise ValueError(f"{op}: weight must be contiguous; call .contiguous() first")
    if not x.dtype == residual.dtype == weight.dtype:
        raise TypeError(
            f"{op}: x, residual and weight must share one dtype, got "
            f"{', '.join(str(t.dtype).removeprefix('torch.') for t in (x, residual, weight))}"
        )
    return n_rows, n_cols


def rmsnorm_fwd(
    x: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    *,
    save_rstd: bool = False,
    plan: RowPlan | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(y, rstd)``: y in x's dtype; rstd (``(M,)`` fp32) only when ``save_rstd``.

    ``plan`` overrides :func:`choose_row_plan` (the lessons and the plan sweep use it).
    """
    n_rows, n_cols = _check_inputs(x, residual, weight)
    y = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    rstd = torch.empty((n_rows,), dtype=torch.float32, device=x.device) if save_rstd else None
    if n_rows == 0:
        return y, rstd
    plan = plan or forward_plan(n_rows, n_cols, x.element_size())
    _rmsnorm_fwd_kernel[plan.grid(n_rows)](
        x, residual, weight, y, rstd if save_rstd else y,  # y stands in for an unused pointer
        n_rows, x.stride(0), residual.stride(0), float(eps),
        N=n_cols, BLOCK=plan.block_cols, ROWS=plan.rows_per_program, CHUNKED=plan.chunked,
        STORE_RSTD=save_rstd, NUM_STAGES=plan.num_stages, EVICT_ROWS=_evict_rows(n_cols),
        MASK_ROWS=_mask_rows(plan, x.dtype, n_rows, n_cols), num_warps=plan.num_warps,
    )  # fmt: skip
    return y, rstd


def forward_plan(n_rows: int, n_cols: int, element_size: int) -> RowPlan:
    """The forward's row plan: softmax's (two passes over a row held in registers), with warps
    counted for the two rows it loads, x and residual (``FORWARD_STREAMS``)."""
    return choose_row_plan(n_rows, n_cols, element_size, passes=2, streams=FORWARD_STREAMS)


def _evict_rows(n_cols: int) -> bool:
    """Whether the whole-row forward marks x and residual ``evict_first``: a measured rule.

    On the H200 (results/h200/tune-rows.log, fp16/bf16) dropping the hint ran 10% faster at
    16384 x 4096 and 4-12% faster at 1823 x 781 and 1024 x 1024, but 3-5% slower at 4096 x 32768
    and up to 6% slower at 65536 x 128. The hint is kept for very wide and very narrow rows.
    """
    return n_cols > 8192 or n_cols < 512


def _mask_rows(plan: RowPlan, dtype: torch.dtype, n_rows: int, n_cols: int) -> bool:
    """Whether the forward masks its loads and stores by row: a measured rule. Always when the
    last program runs past the last row (``n_rows`` not a multiple of ``rows_per_program``);
    otherwise the mask is always true, yet it changes the code, and its cost was timed:

    * the whole-row path drops it only where the row fills its block (``n_cols ==
      block_cols``), so that no mask is left and the loads go out unpredicated;
    * the chunked path (one row a program) drops it except in bf16.

    Whole rows (``results/h200/rmsnorm-mask-rule-*.log``, ``row-mask-probe-cases.log``, and
    before them ``rmsnorm-mask-*.log``): at 1024 x 1024 fp32 (one row a program) dropping it
    ran 3-4% faster warm in three runs (1.077x compile against 1.041x) and 1-3% faster cold;
    at 1823 x 781 fp32 (rows not 16-byte aligned, so scalar loads, and a column mask left) it
    ran 6-7% *slower* warm in two runs and no faster cold, although the SASS differs only in
    the loads' predicates and order (32 registers against 31); why is not settled. Stacked
    plans (two rows a program at 1024 x 1024 in 16-bit, 8 and 16 at 65536 x 128) and one-row
    plans at 16384 x 4096 moved less than 1%, within the runs' noise, either way.

    Chunked rows (4096 x 32768 and 8192 x 16384; six runs: ``rmsnorm-row-mask-probe*.log`` and
    ``row-mask-probe*.log``): dropping it ran fp16 3-5% faster and fp32 1-2% faster at
    4096 x 32768, but bf16 3% slower; at 8192 x 16384 fp32 gained 2% and the 16-bit kernels
    did not move. Profiled (ncu-rmsnorm-row-mask.log), the masked bf16 kernel is the one
    version that compiles to 32 registers a thread, the most at which two of these programs
    share an SM; with two, one program's reduction overlaps the other's loads (81% of the SM's
    warps active against 46%). Capping the others at 32 (``maxnreg``) spills and does not
    help. Why the mask costs fp16 and fp32 time with one program an SM is not settled either.

    A batch size compiles again only if it changes the answer: at most two binaries a plan.
    """
    if n_rows % plan.rows_per_program:
        return True  # the last program's rows past the end must be neither read nor written
    if plan.chunked:
        return dtype == torch.bfloat16
    return n_cols != plan.block_cols


@functools.lru_cache(maxsize=16)
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def _persistent_programs(device: torch.device, num_warps: int) -> int:
    """How many programs the persistent backward launches: enough to fill every SM once."""
    if interpreting():
        return INTERPRETER_SM_COUNT
    sm_count = _sm_count(device.index if device.index is not None else torch.cuda.current_device())
    return sm_count * max(1, RESIDENT_WARPS_PER_SM // num_warps)


def rmsnorm_bwd(
    dy: torch.Tensor,
    x: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor,
    rstd: torch.Tensor,
    *,
    plan: RowPlan | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(dx, dweight)`` from the forward's inputs and saved rstd; dx is also residual's grad."""
    n_rows, n_cols = _check_inputs(x, residual, weight, "rmsnorm backward")
    if dy.shape != x.shape or dy.dtype != x.dtype or dy.device != x.device:
        raise ValueError(
            f"rmsnorm backward: dy is {dy.dtype} {tuple(dy.shape)}; "
            f"expected x's {x.dtype} {tuple(x.shape)}"
        )
    if rstd.shape != (n_rows,) or rstd.dtype != torch.float32 or not rstd.is_contiguous():
        raise ValueError(
            f"rmsnorm backward: rstd must be ({n_rows},) contiguous float32, "
            f"got {rstd.dtype} {tuple(rstd.shape)}"
        )
    dy = dy.contiguous()  # a gradient's layout is autograd's choice; usually a no-op
    dx = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    dweight = torch.empty_like(weight)
    if n_rows == 0:
        return dx, dweight.zero_()
    plan = plan or backward_plan(n_rows, n_cols, x.element_size())
    if plan.chunked:  # too wide to hold: the rows' dot products, then tiles
        partials = _split_backward(dy, x, residual, weight, rstd, dx)
    else:  # persistent whole rows, one partial row a program
        n_row_blocks = -(-n_rows // plan.rows_per_program)
        n_programs = min(n_row_blocks, _persistent_programs(x.device, plan.num_warps))
        partials = torch.empty((n_programs, n_cols), dtype=torch.float32, device=x.device)
        _rmsnorm_bwd_kernel[(n_programs,)](
            dy, x, residual, weight, rstd, dx, partials, n_rows, x.stride(0), residual.stride(0),
            N=n_cols, BLOCK=plan.block_cols, ROWS=plan.rows_per_program,
            num_warps=plan.num_warps,
        )  # fmt: skip
    _rmsnorm_dweight_kernel[(triton.cdiv(n_cols, DWEIGHT_COLUMNS),)](
        partials, dweight, partials.shape[0], N=n_cols, BLOCK=DWEIGHT_COLUMNS,
        PARTIALS=DWEIGHT_PARTIALS, num_warps=4,
    )  # fmt: skip
    return dx, dweight


def _split_backward(dy, x, residual, weight, rstd, dx) -> torch.Tensor:
    """dx for rows too wide to hold, written in place; returns the partial dweight rows (one
    per group of ``SPLIT_GROUP_ROWS`` rows) for the dweight sum."""
    n_rows, n_cols = x.shape
    dots = torch.empty((n_rows,), dtype=torch.float32, device=x.device)
    _rmsnorm_bwd_dots_kernel[(n_rows,)](
        dy, x, residual, weight, dots, x.stride(0), residual.stride(0), N=n_cols,
        BLOCK=min(SPLIT_DOT_COLUMNS, triton.next_power_of_2(n_cols)), num_warps=SPLIT_WARPS,
    )  # fmt: skip
    groups = triton.cdiv(n_rows, SPLIT_GROUP_ROWS)
    partials = torch.empty((groups, n_cols), dtype=torch.float32, device=x.device)
    _rmsnorm_bwd_tiles_kernel[(groups, triton.cdiv(n_cols, SPLIT_TILE_COLUMNS))](
        dy, x, residual, weight, rstd, dots, dx, partials, n_rows, x.stride(0),
        residual.stride(0), N=n_cols, TILE=SPLIT_TILE_COLUMNS, ROWS=SPLIT_TILE_ROWS,
        GROUP_ROWS=SPLIT_GROUP_ROWS, num_warps=SPLIT_WARPS,
    )  # fmt: skip
    return partials


def backward_plan(n_rows: int, n_cols: int, element_size: int) -> RowPlan:
    """The backward's row plan: three live rows, narrow rows stacked to 16 KiB; a row the
    shared rule would chunk is held whole up to ``WHOLE_ROW_BACKWARD`` values (32 warps), and
    a wider one is chunked: :func:`rmsnorm_bwd` runs the split kernels for it."""
    plan = choose_row_plan(
        n_rows, n_cols, element_size, passes=2, live_rows=BACKWARD_LIVE_ROWS,
        tile_bytes=BACKWARD_TILE_BYTES,
    )  # fmt: skip
    block = triton.next_power_of_2(n_cols)
    if plan.chunked and block <= WHOLE_ROW_BACKWARD:
        return RowPlan(block_cols=block, rows_per_program=1, num_warps=32, chunked=False)
    return plan


# --------------------------------------------------------------------------- autograd


class RMSNormFunction(torch.autograd.Function):
    """Forward saves x, residual, weight and one fp32 rstd per row; backward recomputes h."""

    @staticmethod
    def forward(ctx, x, residual, weight, eps):
        y, rstd = rmsnorm_fwd(x, residual, weight, eps, save_rstd=True)
        ctx.save_for_backward(x, residual, weight, rstd)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, residual, weight, rstd = ctx.saved_tensors
        dx, dweight = rmsnorm_bwd(dy, x, residual, weight, rstd)
        # x and residual enter only through h = x + residual: one gradient serves both.
        return dx, dx, dweight, None


def rmsnorm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6
) -> torch.Tensor:
    """Residual RMSNorm with FP32 arithmetic: ``(x + residual) * rsqrt(mean(h^2) + eps) * w``.

    Differentiable in x, residual and weight; without autograd it skips saving rstd.
    """
    if torch.is_grad_enabled() and any(
        isinstance(t, torch.Tensor) and t.requires_grad for t in (x, residual, weight)
    ):
        return RMSNormFunction.apply(x, residual, weight, eps)
    return rmsnorm_fwd(x, residual, weight, eps)[0]
