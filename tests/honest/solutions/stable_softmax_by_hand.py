"""A learner's answers to exercises/foundations/stable_softmax.py (lesson 04)."""
# ruff: noqa: F821  (the exercise's own names)

import torch


def naive_softmax(x: torch.Tensor) -> torch.Tensor:
    numerators = x.exp()
    return numerators / numerators.sum(-1, keepdim=True)


def stable_softmax(x: torch.Tensor) -> torch.Tensor:
    x32 = x.to(torch.float32)
    numerators = (x32 - x32.max(dim=-1, keepdim=True).values).exp()
    return (numerators / numerators.sum(-1, keepdim=True)).to(x.dtype)


def logsumexp(x: torch.Tensor) -> torch.Tensor:
    x32 = x.to(torch.float32)
    peak = x32.max(dim=-1).values
    return (peak + (x32 - peak[..., None]).exp().sum(-1).log()).to(x.dtype)


def exp_overflow_threshold(dtype: torch.dtype) -> int:
    return int(math.log(torch.finfo(dtype).max)) + 1


def naive_fp16_wrong_rows() -> str:
    return "dcb"
