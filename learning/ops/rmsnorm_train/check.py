"""What the kernel checker reads about the RMSNorm training step, besides its spec (no run
imports this module; ``learning.check.op_data`` says what the checker asks of it).

* Rows at least 2 wide: a one-value row's gradient is eps-sized (h / |h| does not move with
  h), so no fp32 kernel meets a tolerance relative to it. Wider rows are well conditioned.
* x and residual may have rows further apart than their width, and eps = 0.5 is graded too,
  as in the forward (``learning.ops.rmsnorm.check``).
* **The chunked and split paths.** The forward walks a row in chunks, and the backward splits
  a row into tiles of 1024 columns, only when the row is far wider than the checker's inputs:
  the checker asks for the chunked forward on narrow rows, and for the split backward on rows
  just wider than one tile.
* **The typical mistakes** of the backward, each as the mistaken kernels compute the
  gradients, in float64: grad_weight summed over only some of the rows (the first ones, or
  the last ones where each program overwrote it), and grad_x without the term that comes
  through 1/rms(h).
"""

from __future__ import annotations

import torch

from learning.check.wrapper_paths import CHUNKED_PLANS, chunked, primes, step
from learning.ops.rmsnorm.check import (  # noqa: F401  (EAGER_SPEEDUP_LIMIT: read by op_data)
    CHUNKED_FORWARD,
    EAGER_SPEEDUP_LIMIT,
    FORWARD,
    SPECIALS,
    STRIDED,
    parts,
)

__all__ = ["MIN_WIDTH", "PATHS", "SPECIALS", "STRIDED", "mistakes"]

MIN_WIDTH = 2
BACKWARD = step("rmsnorm_bwd", ("grad_output", "x", "residual", "weight", "rstd"),
                ("dx", "dweight"))  # fmt: skip
PATHS = (
    {"name": "chunked forward",
     "what": f"the chunked forward, {CHUNKED_FORWARD}, then the backward",
     "steps": (chunked(FORWARD), BACKWARD), "outputs": ("dx", "dx", "dweight"),
     "plans": CHUNKED_PLANS},
    # The split backward's tiles are 1024 columns: rows wider than one tile take two.
    {"name": "split backward",
     "what": "the forward, then the split backward: rmsnorm_bwd(..., "
     "plan=RowPlan(chunked=True)), rows wider than one 1024-column tile",
     "steps": (FORWARD, chunked(BACKWARD)), "outputs": ("dx", "dx", "dweight"),
     "plans": CHUNKED_PLANS,
     "shape": lambda rng: (rng.randint(1, 3), rng.choice(primes(1025, 1400)))},
)  # fmt: skip


def mistakes(inputs: dict, dtype: torch.dtype):
    x, residual, weight, eps, h, inv_rms = parts(inputs)
    dy = inputs["grad_output"]
    contribution = dy * h * inv_rms  # each row's share of grad_weight
    rows = contribution.shape[0]
    prefix = contribution.cumsum(dim=0)
    for row in range(rows - 1):
        yield (
            "grad_weight",
            prefix[row],
            f"grad_weight holds only rows 0-{row}'s contribution: the per-row terms "
            "dy * h * inv_rms must be summed over ALL rows (a partial per program, then a "
            "reduction over the programs)",
        )
        yield (
            "grad_weight",
            prefix[-1] - prefix[row],
            f"grad_weight holds only rows {row + 1}-{rows - 1}'s contribution: each program "
            "overwrote grad_weight with its own partial sum; sum the partials over all rows",
        )
    yield (
        "grad_x",
        dy * weight * inv_rms,
        "grad_x is missing the term from inv_rms depending on h: "
        "dx = inv_rms * (w*dy - h * mean(w*dy*h) * inv_rms^2)",
    )
