"""What the kernel checker reads about ``sum``, besides its spec (no run imports this module;
``learning.check.op_data`` says what the checker asks of it). ``max`` reads the same, with its
own wrapper and reduction (``learning.ops.max.check``).

* x may have rows further apart than its width: the last dimension contiguous, any row stride.
* **The chunked rows.** The wrapper walks a row in chunks only when the row is far wider than
  the checker's inputs, so the checker asks it for a chunked plan on narrow rows, two rows a
  program: ``row_sum(x, plan=RowPlan(chunked=True, ...))``.
* **The typical mistakes**, each as the mistaken kernel computes it, in float64: the
  reduction down the columns, and the reduction over only the first block of each row (tried
  at 16, 32, 64 ... columns a block).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from learning.check.wrapper_paths import CHUNK, chunked_plan, step

STRIDED = ("x",)


def reduction_paths(function: str) -> tuple[dict, ...]:
    """The chunked path of the row reduction ``function`` (``row_sum``, ``row_max``)."""
    return (
        {
            "name": "chunked rows",
            "what": f"a chunked plan: {function}(x, plan=RowPlan(chunked=True, "
            f"block_cols={CHUNK}, rows_per_program=2)), the chunk loop",
            "steps": (step(function, ("x",), ("out",), "chunked"),),
            "outputs": ("out",),
            "plans": {"chunked": chunked_plan(2)},
        },
    )


def reduction_mistakes(reduce: Callable) -> Callable:
    """The typical mistakes of a row reduction that ``reduce(x, dim=-1)`` computes right."""

    def mistakes(inputs, dtype):
        x = inputs["x"]
        rows, cols = x.shape
        if cols >= rows:
            yield (
                "output",
                reduce(x.T[:rows], dim=-1),
                "the output matches a reduction down the columns (dim 0): program i read "
                "column i. Program i must read row i: x_ptr + row * stride_row + cols",
            )
        block = 16
        while block < cols:
            yield (
                "output",
                reduce(x[:, :block], dim=-1),
                f"the output matches a reduction over only the first {block} columns of each "
                f"row: loop over the row in blocks until n_cols (or make BLOCK >= n_cols)",
            )
            block *= 2

    return mistakes


PATHS = reduction_paths("row_sum")
mistakes = reduction_mistakes(torch.sum)
