"""What the kernel checker reads about the attention forward, besides its spec (no run imports
this module; ``learning.check.op_data`` says what the checker asks of it).

* q, k and v may have rows further apart than D: the spec takes any strides.
* **The saved log-sum-exp.** The forward's second output, ``lse`` (fp32, one a query row),
  is what the backward recomputes every probability from; the op's own call returns ``o``
  only, so the checker also calls the wrapper ``attention_fwd(q, k, v, causal) -> (o, lse)``
  and compares ``lse`` at float32's tolerance. Saved in 16 bits it passes any 16-bit
  tolerance (an lse near 5 rounds by 2^-9 in fp16) and costs the backward up to 2^-9 (fp16)
  or 2^-6 (bf16) of every probability: only this comparison shows it.
* **The typical mistakes**, each as the mistaken kernel computes it, in float64: the scores
  not scaled by 1/sqrt(D), or scaled twice, or ``exp2`` without log2(e); the causal mask one
  key off, missing, or applied where no key is hidden; the running output not rescaled when a
  tile raises a row's maximum; the keys of the last, partial tile dropped; the log-sum-exp in
  base 2, or the row maximum alone. The kernels' tile sizes are the learner's, so the
  mistakes that depend on them are tried at 16 to 128 keys a tile. (A log-sum-exp saved in
  16 bits is named from the values the kernel stored: ``learning.check.kernel_hints``.)
"""

from __future__ import annotations

import math

import torch

STRIDED = ("q", "k", "v")
BLOCKS = (16, 32, 64, 128)  # keys a tile: the tile sizes a mistake that depends on them is tried at


def visible(n: int, causal: bool, shift: int = 0, device=None) -> torch.Tensor:
    """``N x N``: may query row i see key j? (``j <= i + shift`` when causal.)"""
    rows = torch.arange(n, device=device)[:, None]
    keys = torch.arange(n, device=device)[None, :]
    return keys <= rows + shift if causal else torch.ones(n, n, dtype=torch.bool, device=device)


def scores(q: torch.Tensor, k: torch.Tensor, scale: float | None = None) -> torch.Tensor:
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    return q @ k.transpose(-2, -1) * scale


def masked(values: torch.Tensor, seen: torch.Tensor) -> torch.Tensor:
    return values.masked_fill(~seen, float("-inf"))


def log_sum_exp(q, k, v, causal) -> torch.Tensor:
    """The forward's saved ``lse``: ``log(sum_j exp(q_i . k_j / sqrt(D)))`` over the keys row
    ``i`` sees, natural log, ``B x H x N``."""
    return torch.logsumexp(masked(scores(q, k), visible(q.shape[-2], causal)), dim=-1)


LSE_PRECISION = (
    "the backward recomputes every probability as exp(s - lse), so a rounded lse scales all of "
    "a row's probabilities by exp(its rounding error): for an lse near 5, up to 2^-9 of each in "
    "fp16 and 2^-6 in bf16, errors no 16-bit tolerance on o shows"
)
PATHS = (
    {
        "name": "saved log-sum-exp",
        "what": "the forward wrapper called as the backward uses it: attention_fwd(q, k, v, "
        "causal) -> (o, lse), the lse compared too (fp32, one a query row)",
        "steps": (
            {"function": "attention_fwd", "args": ["q", "k", "v", "causal"],
             "results": ["o", "lse"], "plan": None, "kwargs": {}},
        ),  # fmt: skip
        "outputs": ("o", "lse"),
        "extra": {"lse": (log_sum_exp, torch.float32, LSE_PRECISION)},
        "alone": "The op's own call returns o alone: only this input shows what the forward "
        "saves for the backward",
    },
)


def _attend(s: torch.Tensor, seen: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.softmax(masked(s, seen), dim=-1) @ v


def _without_rescale(s: torch.Tensor, v: torch.Tensor, block: int, rescale_sum: bool):
    """The online softmax over tiles of ``block`` keys with ``acc`` (and, unless
    ``rescale_sum``, the row sum) never multiplied by exp(old max - new max): each tile's
    terms keep the weight exp(s - the maximum when that tile was read)."""
    n = s.shape[-1]
    running = torch.full(s.shape[:-1], float("-inf"), dtype=s.dtype)
    acc = torch.zeros((*s.shape[:-1], v.shape[-1]), dtype=s.dtype)
    total = torch.zeros(s.shape[:-1], dtype=s.dtype)
    for start in range(0, n, block):
        tile = s[..., start : start + block]
        running = torch.maximum(running, tile.amax(dim=-1))
        weights = (tile - running[..., None]).exp()
        acc = acc + weights @ v[..., start : start + block, :]
        total = total + weights.sum(dim=-1)
    if rescale_sum:
        total = (s - running[..., None]).exp().sum(dim=-1)
    return acc / total[..., None]


def mistakes(inputs: dict, dtype: torch.dtype):
    q, k, v, causal = (inputs[name] for name in ("q", "k", "v", "causal"))
    n, d = q.shape[-2], q.shape[-1]
    seen = visible(n, causal)
    right = scores(q, k)
    yield ("output", _attend(scores(q, k, 1.0), seen, v),
           "the output is softmax(q k^T) v: the scores were never scaled by 1/sqrt(D). Scale "
           "each tile's scores as they leave tl.dot (qk_scale = 1/sqrt(D) * log2(e) with "
           "exp2)")  # fmt: skip
    yield ("output", _attend(scores(q, k, 1.0 / d), seen, v),
           "the output is softmax(q k^T / D) v: the scores were scaled by 1/sqrt(D) twice "
           "(once into qk_scale and once more, or into q as well)")  # fmt: skip
    yield ("output", _attend(right * math.log(2), seen, v),
           "the output is the softmax in base 2 of the scaled scores: exp2 was taken of "
           "s / sqrt(D) without the factor log2(e). exp(x) = exp2(x * log2(e)): fold log2(e) "
           "into qk_scale")  # fmt: skip
    yield ("output", _attend(right * math.log2(math.e), seen, v),
           "the output is the softmax of s * log2(e): the scores were put in base 2 "
           "(qk_scale includes log2(e)) but exponentiated with exp, not exp2")  # fmt: skip
    if causal:
        for shift, how in ((-1, "j < i: the diagonal is hidden, and row 0 sees no key at all"),
                           (1, "j <= i + 1: each row also sees the next key")):  # fmt: skip
            yield ("output", _attend(right, visible(n, True, shift), v),
                   f"the output is causal attention with the mask one key off, {how}. Query "
                   "row i sees keys 0..i: keys <= rows, with both counted from the start of "
                   "the sequence (the program's first row plus its offset)")  # fmt: skip
        yield ("output", _attend(right, visible(n, False), v),
               "the output sees every key: the causal mask was not applied (query row i sees "
               "keys 0..i only)")  # fmt: skip
    else:
        yield ("output", _attend(right, visible(n, True), v),
               "the output is causal attention: this call has causal=False, and every query "
               "row sees every key. Mask only when CAUSAL")  # fmt: skip
    for block in BLOCKS:
        if block >= n:
            break
        for rescale_sum, what in ((True, "the running output acc was not"),
                                  (False, "neither the running output acc nor the row sum was")):
            yield ("output", _without_rescale(masked(right, seen), v, block, rescale_sum),
                   f"the output matches the online softmax over tiles of {block} keys in which "
                   f"{what} rescaled when a tile raised the row maximum: everything "
                   "accumulated so far was weighted by exp(s - old max) and must be multiplied "
                   "by exp(old max - new max) before the tile's P v is added")  # fmt: skip
        kept = n - n % block
        if 0 < kept < n:
            some = seen & (torch.arange(n)[None, :] < kept)
            yield ("output", _attend(right, some, v),
                   f"the output matches attention over only the first {kept} of N={n} keys: "
                   f"the keys of the last, partial tile of {block} were dropped. Walk the keys "
                   "to N and mask the last tile (keys < N, the scores of the others -inf)")
    lse = log_sum_exp(q, k, v, causal)
    yield ("lse", lse * math.log2(math.e),
           "lse is in base 2 (row_max + log2(row_sum) in exp2 units): the backward reads the "
           "natural log, so multiply by ln(2) before storing it")  # fmt: skip
    yield ("lse", masked(right, seen).amax(dim=-1),
           "lse is the row maximum alone: the log-sum-exp is max + log(sum of exp(s - max))")
