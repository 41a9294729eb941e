"""What the kernel checker reads about the softmax training step, besides its spec (no run
imports this module; ``learning.check.op_data`` says what the checker asks of it).

* x may have rows further apart than its width, as in the forward
  (``learning.ops.softmax.check``).
* No x100 trap: on x100 inputs the gradients nearly cancel and no fp32 kernel meets a
  tolerance relative to their tiny magnitude. The forward's shifted inputs (``LARGE``: x + 100)
  change neither y nor the gradient, so every case gets a call on them here too, the chunked
  forward's included.
* **The chunked paths.** The forward and the backward each walk a row in chunks only when the
  row is far wider than the checker's inputs, so the checker asks for each chunked on narrow
  rows, the other one whole.
* **The typical mistakes** of the backward, each as the mistaken kernel computes grad_x, in
  float64: the row-sum term left out, the sum taken of dy instead of y * dy, and dy passed
  through.
"""

from __future__ import annotations

import torch

from learning.check.wrapper_paths import CHUNK, CHUNKED_PLANS, chunked, step
from learning.ops.softmax.check import CHUNKED_FORWARD, FORWARD, LARGE, STRIDED

__all__ = ["LARGE", "PATHS", "STRIDED", "mistakes"]

BACKWARD = step("softmax_bwd", ("y", "grad_output"), ("dx",))
PATHS = (
    {"name": "chunked forward",
     "what": f"the chunked forward, {CHUNKED_FORWARD}, then the backward",
     "steps": (chunked(FORWARD), BACKWARD), "outputs": ("dx",), "plans": CHUNKED_PLANS},
    {"name": "chunked backward",
     "what": "the forward, then the chunked backward: softmax_bwd(y, dy, "
     f"plan=RowPlan(chunked=True, block_cols={CHUNK}))",
     "steps": (FORWARD, chunked(BACKWARD)), "outputs": ("dx",), "plans": CHUNKED_PLANS},
)  # fmt: skip


def mistakes(inputs: dict, dtype: torch.dtype):
    x, dy = inputs["x"], inputs["grad_output"]
    y = torch.softmax(x, dim=-1)
    yield (
        "grad_x",
        y * dy,
        "grad_x matches y * dy: it is missing the row-sum term. "
        "dx = y * (dy - sum(y * dy, over the row))",
    )
    yield (
        "grad_x",
        y * (dy - dy.sum(dim=-1, keepdim=True)),
        "grad_x uses sum(dy) over the row; the term is sum(y * dy)",
    )
    yield "grad_x", dy, "grad_x equals dy: the backward kernel passed the gradient through"
