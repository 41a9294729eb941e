# Your copy of reference/kernels/reductions.py,
# made by scripts/make_exercises.py with the solution regions replaced by TODOs.
# This file is yours to edit; `python -m learning.check <exercise>` grades it.
# (Maintainers: edit the reference and rerun the script, never this copy.)
"""Row reductions: ``row_sum(x)`` and ``row_max(x)`` over the last dimension.

Spec: ``x`` is ``M x N`` (float16, bfloat16 or float32) with a contiguous last dimension (any
row stride). The output has shape ``(M,)`` and ``x``'s dtype. ``row_sum`` accumulates in fp32
and rounds once at the end; ``row_max`` is exact in any dtype.

Logical bytes, as the registry counts them: read ``M * N``, write ``M`` elements:
``(M * N + M) * element_size``. The write is negligible, so the ceiling is the read bandwidth.

Design (what the lessons quote): both kernels follow the shared row plan
(:mod:`reference.kernels.row_plan`, ``passes=1``) and share one launcher.

* Each program owns ``ROWS`` rows as a ``[ROWS, BLOCK]`` tile: narrow rows (65536 x 128) are
  stacked 16 to a program so that each program moves ~4 KiB, not 256 bytes.
* The row is walked in ``BLOCK``-wide steps. For rows up to 16 KiB that is one step (the
  whole row); a wider row (4096 x 32768) loops. A reduction reads every element exactly once
  whatever the block, so the loop costs no traffic, and it keeps the registers a program needs
  small enough for several programs to share an SM.
* Inside the loop nothing is reduced across threads: each lane keeps its own fp32 partial
  (``acc``, a ``[ROWS, BLOCK]`` tile), and one ``tl.sum`` / ``tl.max`` at the end folds it.
  Reducing every step would put a shared-memory round trip inside the loop.
* ``acc`` starts as the first step's values, not as zeros (or -inf) that the first step is
  added to: ``x + 0.0`` is not ``x`` when ``x`` is -0.0 (and ``max(-inf, x)`` is not ``x``
  when ``x`` is NaN), so the compiler must keep one add per value, 8 of the 79 instructions
  of the fp32 sum at 4096 wide (``scripts/row_sum_code.py --sass`` counts them, no GPU
  needed).
* Every load says ``eviction_policy="evict_first"``: each value is read once. Paired by round
  against torch.compile (whose loads say the same), the hint with that start moved every sum
  and max timed by 0.0% to +2.4% and closed the fp32 sum's last steady loss at 16384 x 4096
  (0.997 to 1.000, ``results/h200/row-sum-code.log``). The hint did most of it; the start
  alone moved nothing measurable, and with the hint added 0.0-0.3% (0.9% at 1024 x 1024).
  The same hint costs the ``add`` 10% (``streaming-variants.log``): a hint is a measurement,
  not a rule.
* ``N`` is a ``tl.constexpr`` (one compiled variant per width, and the trip count is known);
  the row count is a runtime argument excluded from specialization, so any batch size reuses
  the same binary.
"""

import torch
import triton
import triton.language as tl

from reference.kernels.row_plan import RowPlan, check_rows, choose_row_plan


@triton.jit(do_not_specialize=["n_rows"])
def _row_sum_kernel(
    x_ptr,  # *Pointer* to the input, M x N, last dimension contiguous
    out_ptr,  # *Pointer* to the output, M values, x's dtype
    n_rows,  # runtime: M, the row count (never specialized: a new batch size reuses the binary)
    x_row_stride,  # elements between the starts of consecutive rows of x
    N: tl.constexpr,  # row width (columns); one compiled variant per width
    BLOCK: tl.constexpr,  # columns per step, a power of two (the whole row unless chunked)
    ROWS: tl.constexpr,  # rows per program (>1 stacks narrow rows into one tile)
    NUM_STAGES: tl.constexpr,  # software-pipelining depth of the column loop
):
    # read M*N, write M
    # TODO: sum ROWS rows per program in fp32, BLOCK columns per step; store one value a row
    pass


@triton.jit(do_not_specialize=["n_rows"])
def _row_max_kernel(
    x_ptr,  # *Pointer* to the input, M x N, last dimension contiguous
    out_ptr,  # *Pointer* to the output, M values, x's dtype
    n_rows,  # runtime: M, the row count (never specialized: a new batch size reuses the binary)
    x_row_stride,  # elements between the starts of consecutive rows of x
    N: tl.constexpr,  # row width (columns); one compiled variant per width
    BLOCK: tl.constexpr,  # columns per step, a power of two (the whole row unless chunked)
    ROWS: tl.constexpr,  # rows per program (>1 stacks narrow rows into one tile)
    NUM_STAGES: tl.constexpr,  # software-pipelining depth of the column loop
):
    # read M*N, write M
    # TODO: the maximum of ROWS rows per program, BLOCK columns per step (masked lanes: -inf)
    pass


def row_reduce(x: torch.Tensor, kernel, op: str, plan: RowPlan | None = None) -> torch.Tensor:
    """Validate ``x``, allocate the ``(M,)`` output, launch ``kernel`` with the row plan.

    ``plan`` overrides :func:`choose_row_plan` (the lessons and the plan sweep use it).
    """
    n_rows, n_cols = check_rows(x, op)
    out = torch.empty((n_rows,), dtype=x.dtype, device=x.device)
    if n_rows == 0:
        return out
    plan = plan or choose_row_plan(n_rows, n_cols, x.element_size(), passes=1)
    kernel[plan.grid(n_rows)](
        x, out, n_rows, x.stride(0),
        N=n_cols, BLOCK=plan.block_cols, ROWS=plan.rows_per_program,
        NUM_STAGES=plan.num_stages, num_warps=plan.num_warps,
    )  # fmt: skip
    return out


def row_sum(x: torch.Tensor, plan: RowPlan | None = None) -> torch.Tensor:
    """The sum of each row of a 2-D tensor: shape ``(M,)``, ``x``'s dtype, fp32 accumulation."""
    return row_reduce(x, _row_sum_kernel, "row_sum", plan)


def row_max(x: torch.Tensor, plan: RowPlan | None = None) -> torch.Tensor:
    """The maximum of each row of a 2-D tensor: shape ``(M,)``, ``x``'s dtype."""
    return row_reduce(x, _row_max_kernel, "row_max", plan)
