"""What the kernel checker reads about ``softmax``, besides its spec (no run imports this
module; ``learning.check.op_data`` says what the checker asks of it). The training step reads
its forward from here (``learning.ops.softmax_train.check``).

* x may have rows further apart than its width: the last dimension contiguous, any row stride.
* **Large inputs.** x scaled by 100 overflows ``exp`` unless the kernel subtracts the row
  maximum first: the checker grades that trap on the irregular CPU shape, in fp32 and fp16.
  And every other case gets a call on x shifted by :data:`LARGE_SHIFT` (``LARGE``), at its own
  width and path (chunked rows too): a shift leaves the softmax as it was and overflows
  ``exp(x)`` everywhere, so a kernel that skips the maximum on any path fails there.
* **The chunked rows.** The forward walks a row in chunks only when the row is far wider than
  the checker's inputs, so the checker asks it for a chunked plan on narrow rows.
* **The typical mistakes**, each as the mistaken kernel computes it, in float64: the softmax
  down the columns, the division by the row sum left out, and the row maximum left out (NaN
  exactly where ``exp`` overflows).
"""

from __future__ import annotations

import torch

from learning.check.wrapper_paths import CHUNK, CHUNKED_PLANS, chunked, step

STRIDED = ("x",)


def _times_100(values: dict) -> dict:
    return {**values, "x": values["x"] * 100.0}


SPECIALS = (
    {"name": "large inputs (x100)", "note": "x scaled by 100",
     "dtypes": (torch.float32, torch.float16), "transform": _times_100},
)  # fmt: skip

# exp(x + 100) overflows float32 (whose largest exp is exp(88.7)) for every x that randn draws;
# a shift changes no softmax, nor its gradient, and keeps x exact enough in every dtype that
# x - max is exact (two values of one binade).
LARGE_SHIFT = 100.0


def _shifted(values: dict) -> dict:
    return {**values, "x": values["x"] + LARGE_SHIFT}


LARGE = {"note": f"x shifted by +{LARGE_SHIFT:g}", "transform": _shifted}

FORWARD = step("softmax_fwd", ("x",), ("y",))
CHUNKED_FORWARD = f"softmax_fwd(x, plan=RowPlan(chunked=True, block_cols={CHUNK}))"
PATHS = (
    {"name": "chunked rows", "what": f"the chunked forward: {CHUNKED_FORWARD}",
     "steps": (chunked(FORWARD),), "outputs": ("y",), "plans": CHUNKED_PLANS},
)  # fmt: skip


def mistakes(inputs: dict, dtype: torch.dtype):
    x = inputs["x"]
    shifted = (x - x.amax(dim=-1, keepdim=True)).exp()
    yield (
        "output",
        torch.softmax(x, dim=0),
        "the output matches a softmax down the columns (dim 0): normalise over each row",
    )
    yield "output", shifted, "the output is exp(x - max) without the division by the row sum"
    # exp(x) / sum(exp(x)) without the max, computed as a kernel would (float32, or the input
    # dtype): NaN wherever exp overflowed. Only an output that holds NaN exactly there and is
    # right elsewhere shows the missing max; NaN from anywhere else is not this fault.
    for compute in dict.fromkeys((torch.float32, dtype)):
        numerator = x.to(compute).exp()
        if bool(torch.isfinite(numerator).all()):
            continue  # no overflow on these inputs: the mistake gives the right answer
        yield (
            "output",
            (numerator / numerator.sum(dim=-1, keepdim=True)).double(),
            f"the output is NaN exactly where exp(x) overflows {str(compute)[6:]} and right "
            "elsewhere: subtract the row max before exponentiating, softmax(x) = "
            "softmax(x - max(x)) is exact and never overflows",
        )
