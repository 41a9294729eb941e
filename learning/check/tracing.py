"""A record of the ATen operators a piece of PyTorch code runs (``TorchDispatchMode``).

The checker traces its own code with it (how many kernels ``ops.rmsnorm_composition`` launches,
and the bytes they move); the worker traces a learner's function with it to *report* how it
worked (how many tile products a blocked matmul made), a report that is a hint and never points.
"""

from __future__ import annotations

import functools
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class DispatchMode(TorchDispatchMode):
    """A ``TorchDispatchMode`` whose ``__torch_dispatch__`` is hidden from ``torch.compile``
    only in a process that has imported ``torch._dynamo``.

    PyTorch wraps a subclass's ``__torch_dispatch__`` in ``torch._disable_dynamo``, whose first
    call imports ``torch._dynamo``: about 1.5 s of CPU in every check worker that records a
    call, though none of them compiles anything. Nothing can be compiled before that import
    (``torch.compile`` makes it), so until then the method runs unwrapped; after it, wrapped
    as PyTorch wraps it."""

    def __init_subclass__(cls, **kwargs):
        raw = cls.__dict__.get("__torch_dispatch__")
        super().__init_subclass__(**kwargs)
        wrapped = cls.__dict__.get("__torch_dispatch__")
        if raw is None or wrapped is raw:
            return

        @functools.wraps(raw)
        def dispatch(*args, **kwargs):
            if "torch._dynamo" in sys.modules:
                return wrapped(*args, **kwargs)
            return raw(*args, **kwargs)

        cls.__torch_dispatch__ = dispatch


class Dispatches(DispatchMode):
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
