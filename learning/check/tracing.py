"""A record of the ATen operators a piece of PyTorch code runs (``TorchDispatchMode``).

The checker traces its own code with it (how many kernels ``ops.rmsnorm_composition`` launches,
and the bytes they move); the worker traces a learner's function with it to *report* how it
worked (how many tile products a blocked matmul made), a report that is a hint and never points.
"""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class Dispatches(TorchDispatchMode):
    """Records each ATen operator that runs, with the bytes of its tensor inputs and outputs."""

    def __init__(self):
        super().__init__()
        self.calls: list[tuple[str, int]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        tensors = [a for a in [*args, *(kwargs or {}).values()] if isinstance(a, torch.Tensor)]
        outputs = out if isinstance(out, tuple | list) else (out,)
        moved = sum(t.nbytes for t in [*tensors, *outputs] if isinstance(t, torch.Tensor))
        self.calls.append((func.overloadpacket.__name__, moved))
        return out
