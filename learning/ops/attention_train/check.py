"""What the kernel checker reads about the attention training step, besides its spec (no run
imports this module; ``learning.check.op_data`` says what the checker asks of it).

The typical mistakes of the backward, each as the mistaken kernels compute dq, dk and dv, in
float64, from the softmax's gradient written out: with ``P`` the probabilities,
``dv = P^T dO``, ``dP = dO v^T``, ``dS = P * (dP - D_i)`` where ``D_i = rowsum(dO * o)``,
``dq = dS k / sqrt(D)`` and ``dk = dS^T q / sqrt(D)``. The mistakes: ``D_i`` left out (or
taken as ``rowsum(dO)``), the 1/sqrt(D) of dq and dk left out or applied twice, the
backward's causal mask one key off, and the forward's mistakes (the scale, the mask) seen
through their exact gradients.
"""

from __future__ import annotations

import math

import torch

from learning.ops.attention.check import STRIDED, masked, scores, visible

__all__ = ["STRIDED", "mistakes"]


def gradients(q, k, v, grad_output, causal, *, scale=None, shift=0, backward_shift=None,
              delta=True, delta_of_do=False, backward_scale=None):  # fmt: skip
    """``(dq, dk, dv)`` of attention as a backward computes them, with one thing changed:

    ``scale`` the forward's score scale (1/sqrt(D) when None) and ``shift`` its causal mask's
    offset (the exact gradient of that mistaken forward); ``backward_shift`` the backward's
    own mask offset, its probabilities recomputed from the forward's lse; ``delta`` False
    leaves ``D_i`` out, ``delta_of_do`` takes it as ``rowsum(dO)``; ``backward_scale`` the
    factor of dq and dk."""
    n, d = q.shape[-2], q.shape[-1]
    scale = 1 / math.sqrt(d) if scale is None else scale
    backward_scale = scale if backward_scale is None else backward_scale
    s = scores(q, k, scale)
    seen = visible(n, causal, shift)
    lse = torch.logsumexp(masked(s, seen), dim=-1, keepdim=True)
    probabilities = (masked(s, seen) - lse).exp()
    o = probabilities @ v
    if backward_shift is not None:
        seen = visible(n, causal, backward_shift)
        probabilities = (masked(s, seen) - lse).exp()
    dv = probabilities.transpose(-2, -1) @ grad_output
    dp = grad_output @ v.transpose(-2, -1)
    d_i = (grad_output * o).sum(dim=-1, keepdim=True)
    if delta_of_do:
        d_i = grad_output.sum(dim=-1, keepdim=True)
    ds = probabilities * (dp - d_i) if delta else probabilities * dp
    return ds @ k * backward_scale, ds.transpose(-2, -1) @ q * backward_scale, dv


def mistakes(inputs: dict, dtype: torch.dtype):
    q, k, v, dy, causal = (inputs[name] for name in ("q", "k", "v", "grad_output", "causal"))
    d = q.shape[-1]

    def each(hint: str, labels=("grad_q", "grad_k", "grad_v"), masked_causal=causal, **change):
        for label, value in zip(("grad_q", "grad_k", "grad_v"),
                                gradients(q, k, v, dy, masked_causal, **change), strict=True):
            if label in labels:
                yield label, value, hint

    yield from each("dq and dk match a backward without D_i = rowsum(dO * o): the softmax's "
                    "gradient is dS = P * (dP - D_i), one D_i a query row (computed once, from "
                    "o and dO, before the key tiles)", ("grad_q", "grad_k"), delta=False)
    yield from each("dq and dk match a backward with D_i = rowsum(dO): the term is "
                    "rowsum(dO * o), the output's gradient against the output itself",
                    ("grad_q", "grad_k"), delta_of_do=True)
    yield from each("dq and dk are sqrt(D) times too large: dS is the gradient of the scaled "
                    "scores, so dq = dS k / sqrt(D) and dk = dS^T q / sqrt(D)",
                    ("grad_q", "grad_k"), backward_scale=1.0)
    yield from each("dq and dk are sqrt(D) times too small: the 1/sqrt(D) was applied twice "
                    "(once in the recomputed P's qk_scale, where it belongs, and again to dq "
                    "and dk past the one factor the chain rule gives)", ("grad_q", "grad_k"),
                    backward_scale=1 / d)
    yield from each("the gradients are those of softmax(q k^T) v: the forward never scaled the "
                    "scores by 1/sqrt(D)", scale=1.0, backward_scale=1.0)
    yield from each("the gradients are those of softmax(q k^T / D) v: the forward scaled the "
                    "scores by 1/sqrt(D) twice", scale=1 / d, backward_scale=1 / d)
    # (Not the lse saved in 16 bits: its gradients lie within a loose tolerance of the right
    # ones, so a failure for any other reason would match them. The forward's check compares
    # the saved lse itself.)
    if causal:
        for shift, how in ((-1, "j < i (the diagonal hidden)"), (1, "j <= i + 1")):
            yield from each(f"the gradients match a backward whose causal mask is one key off, "
                            f"{how}: the recomputed P must be masked as the forward's was, "
                            "key j seen by query rows i >= j", backward_shift=shift)
        yield from each("the gradients match a backward without the causal mask: the "
                        "recomputed P must be zero above the diagonal",
                        backward_shift=q.shape[-2])  # a causal mask that hides no key
    else:
        yield from each("the gradients are those of causal attention: this call has "
                        "causal=False, every query row sees every key", masked_causal=True)
