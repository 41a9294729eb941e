"""What the kernel checker reads about ``rmsnorm``, besides its spec (no run imports this
module; ``learning.check.op_data`` says what the checker asks of it). The training step reads
its forward from here (``learning.ops.rmsnorm_train.check``).

* x and residual may have rows further apart than their width: the last dimension
  contiguous, any row stride.
* **A visible eps.** The spec's eps (RMSNORM_EPS) is too small to show a kernel that ignores the
  ``eps`` argument or adds it in the wrong place, so the checker also calls with eps = 0.5.
* **The chunked rows.** The forward walks a row in chunks only when the row is far wider than
  the checker's inputs, so the checker asks it for a chunked plan on narrow rows.
* **The typical mistakes**, each as the mistaken kernel computes it, in float64: the residual
  not added, the weight not applied, eps left out or added outside the square root, and
  ``h = x + residual`` rounded to a 16-bit input dtype before the mean.
* **A plausible speed-up of 20x over eager** (the grader's question, not the checker's): the
  eager baseline is the ten-kernel composition a PyTorch user writes, and the reference's fused
  kernel is 13-15x faster than it on the H200 (``results/h200/all.json``).
"""

from __future__ import annotations

import torch

from learning.check.wrapper_paths import CHUNK, CHUNKED_PLANS, chunked, step

STRIDED = ("x", "residual")
SPECIALS = (
    {"name": "eps = 0.5 (the argument)", "note": "eps = 0.5", "dtypes": (torch.float32,),
     "transform": lambda values: {**values, "eps": 0.5}},
)  # fmt: skip

FORWARD = step("rmsnorm_fwd", ("x", "residual", "weight", "eps"), ("y", "rstd"),
               save_rstd=True)  # fmt: skip
CHUNKED_FORWARD = f"rmsnorm_fwd(..., plan=RowPlan(chunked=True, block_cols={CHUNK}))"
PATHS = (
    {"name": "chunked rows", "what": f"the chunked forward: {CHUNKED_FORWARD}",
     "steps": (chunked(FORWARD),), "outputs": ("y",), "plans": CHUNKED_PLANS},
)  # fmt: skip


def parts(inputs: dict):
    """``x, residual, weight, eps``, then ``h = x + residual`` and ``1 / rms(h)`` a row."""
    x, residual, weight, eps = (inputs[k] for k in ("x", "residual", "weight", "eps"))
    h = x + residual
    inv_rms = torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps)
    return x, residual, weight, eps, h, inv_rms


def mistakes(inputs: dict, dtype: torch.dtype):
    x, residual, weight, eps, h, inv_rms = parts(inputs)
    yield (
        "output",
        x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight,
        "the output matches RMSNorm of x alone: add the residual first (h = x + residual)",
    )
    yield "output", h * inv_rms, "the output is not multiplied by weight"
    yield (
        "output",
        h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True)) * weight,
        "the output matches RMSNorm without eps: add eps inside the rsqrt, "
        "rsqrt(mean(h^2) + eps), using the eps argument",
    )
    yield (
        "output",
        h * weight / (h.pow(2).mean(dim=-1, keepdim=True).sqrt() + eps),
        "eps is added outside the square root: rsqrt(mean(h^2) + eps)",
    )
    if dtype != torch.float32:
        h_low = h.to(dtype).double()  # h rounded to the input dtype before the mean
        yield (
            "output",
            h_low * torch.rsqrt(h_low.pow(2).mean(dim=-1, keepdim=True) + eps) * weight,
            f"h = x + residual was rounded to {str(dtype).removeprefix('torch.')} before "
            "the mean: add and accumulate in float32 (x.to(tl.float32))",
        )


EAGER_SPEEDUP_LIMIT = 20.0  # learning.grade.plausibility: a faster learner kernel is questioned
