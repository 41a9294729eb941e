"""Guarded memory around one call of a kernel, and a launch counter.

* :class:`AllocationTrap` turns each ``torch.empty``-style allocation the implementation makes
  into a view inside a larger buffer. The view is pre-filled with a NaN of a recognisable bit
  pattern (``_UNWRITTEN_BITS``), so a value the kernel never stored stays recognisable; the
  regions before and after hold a sentinel byte (:data:`GUARD_BYTE`), so a store past either
  end shows up.
* :func:`place_inputs` puts the inputs inside buffers whose guard regions hold NaN: an
  unmasked load past the end of a row reads NaN and poisons the result.
* :class:`LaunchCounter` counts Triton kernel launches (interpreted or compiled).

The kernel checker's worker poisons the learner's allocations with :class:`AllocationTrap`, so
that an output returned unwritten is recognisable in what comes back; what decides a check is
the replay of the recorded launches (:mod:`learning.check.replay`), which lays out its own
buffers the same way. kernel-bench's gate uses the trap too. Triton's interpreter uses real
pointers and does not bounds-check, which is why the guards are large enough for a whole block
past the end; a store beyond even that crashes the process it runs in, never the checker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from triton.runtime.interpreter import InterpretedFunction
from triton.runtime.jit import JITFunction

from learning.guards import (  # noqa: F401 (shared with the replay and the gate)
    _MAX_GUARD,
    _MIN_GUARD,
    _UNWRITTEN_BITS,
    GUARD_BYTE,
    AllocationTrap,
    GuardedBuffer,
    _as_bytes,
    _describe,
    _guarded_like,
    _span,
    guard_elements,
    unwritten_mask,
)

# --------------------------------------------------------------------------- guarded inputs


@dataclass
class GuardedInput:
    name: str
    buffer: torch.Tensor
    view: torch.Tensor
    guard: int
    snapshot: torch.Tensor = field(repr=False)  # the whole buffer's bytes before the call

    def refresh_snapshot(self) -> None:
        self.snapshot = _as_bytes(self.buffer).clone()

    def mutated(self) -> tuple[int, int, int]:
        """(elements changed inside, elements written before the start, ... past the end)."""
        now = _as_bytes(self.buffer)
        if torch.equal(now, self.snapshot):
            return 0, 0, 0
        itemsize = self.buffer.element_size()
        changed = (now != self.snapshot).nonzero().flatten() // itemsize
        changed = torch.unique(changed)
        numel = self.view.numel()
        inside = int(((changed >= self.guard) & (changed < self.guard + numel)).sum())
        head = changed[changed < self.guard]
        tail = changed[changed >= self.guard + numel]
        before = self.guard - int(head[0]) if len(head) else 0
        after = int(tail[-1]) - (self.guard + numel) + 1 if len(tail) else 0
        return inside, before, after


def place_inputs(values: dict[str, Any], wrt: tuple[str, ...], guard_fill: float = float("nan")):
    """Copies of ``values`` living inside buffers whose guards hold ``guard_fill``.

    Returns ``(inputs, guarded)``: the dict to call with (``wrt`` inputs require grad) and one
    :class:`GuardedInput` per tensor.
    """
    inputs: dict[str, Any] = {}
    guarded: list[GuardedInput] = []
    for name, value in values.items():
        if not torch.is_tensor(value):
            inputs[name] = value
            continue
        value = value.detach().contiguous()
        guard = guard_elements(value.numel())
        buffer = torch.full(
            (guard + value.numel() + guard,), guard_fill, dtype=value.dtype, device=value.device
        )
        view = buffer[guard : guard + value.numel()].view(value.shape)
        view.copy_(value)
        if name in wrt:
            view.requires_grad_(True)
        inputs[name] = view
        guarded.append(GuardedInput(name, buffer, view, guard, _as_bytes(buffer).clone()))
    return inputs, guarded


# --------------------------------------------------------------------------- launches


class LaunchCounter:
    """Counts Triton kernel launches (interpreted or compiled) while active."""

    def __init__(self) -> None:
        self.kernels: list[str] = []
        self.modules: list[str] = []  # the module that defines each launched kernel
        self._originals: dict[type, Any] = {}

    def __enter__(self) -> LaunchCounter:
        for cls in (InterpretedFunction, JITFunction):
            original = cls.run
            self._originals[cls] = original
            cls.run = self._wrap(original)
        return self

    def __exit__(self, *exc_info) -> None:
        for cls, original in self._originals.items():
            cls.run = original

    def _wrap(self, original):
        counter = self

        def run(self, *args, **kwargs):
            if not kwargs.get("warmup", False):
                counter.kernels.append(getattr(self, "__name__", "kernel"))
                function = getattr(self, "fn", None)
                counter.modules.append(getattr(function, "__module__", None) or "?")
            return original(self, *args, **kwargs)

        return run
