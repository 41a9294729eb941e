"""Poisoned memory: allocations whose unwritten elements and stray stores stay visible.

Used wherever a result must not pass by accident of what memory held before: the checker
(``learning.check.kernel_guards``), the replay of a learner's launches
(``learning.check.replay``) and kernel-bench's correctness gate (``learning.bench.gate``).

* :class:`AllocationTrap` turns each ``torch.empty``-style allocation into a view inside a
  larger buffer. The view is pre-filled with a NaN of a recognisable bit pattern, so a value
  never stored stays recognisable (:func:`unwritten_mask`); the regions before and after hold
  a sentinel byte (:data:`GUARD_BYTE`), so a store past either end shows up
  (:meth:`GuardedBuffer.stray_stores`).

Triton's interpreter uses real pointers and does not bounds-check, which is why the guards are
large enough for a whole block past the end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

GUARD_BYTE = 0xA5  # the sentinel in the guard regions around an allocation
_MIN_GUARD, _MAX_GUARD = 4096, 1 << 20  # elements on each side

# A quiet NaN whose payload no arithmetic produces: "still as the checker left it".
_UNWRITTEN_BITS = {
    torch.float16: (torch.int16, 0x7E6B),
    torch.bfloat16: (torch.int16, 0x7FEB),
    torch.float32: (torch.int32, 0x7FC02B6B),
    torch.float64: (torch.int64, 0x7FF8000000002B6B),
}


def guard_elements(numel: int) -> int:
    """Elements of guard on each side of an allocation of ``numel`` elements."""
    return min(max(_MIN_GUARD, numel), _MAX_GUARD)


def unwritten_mask(tensor: torch.Tensor) -> torch.Tensor | None:
    """Where ``tensor`` still holds the checker's fill (never stored to); None if not knowable."""
    bits = _UNWRITTEN_BITS.get(tensor.dtype)
    if bits is None or tensor.numel() == 0:
        return None
    int_dtype, pattern = bits
    return tensor.detach().contiguous().view(int_dtype) == pattern


def _span(size: tuple[int, ...], stride: tuple[int, ...]) -> int:
    """Elements of storage a strided tensor reaches, from its first element to its last."""
    if any(s == 0 for s in size):
        return 0
    return 1 + sum((s - 1) * st for s, st in zip(size, stride, strict=True))


def _as_bytes(buffer: torch.Tensor) -> torch.Tensor:
    return buffer.view(torch.uint8)


# --------------------------------------------------------------------------- guarded allocations


@dataclass
class GuardedBuffer:
    """One guarded allocation: ``view`` is what the code saw, inside ``buffer``."""

    label: str  # how it was made, e.g. "torch.empty_like -> 37x781 float16"
    buffer: torch.Tensor  # flat: [guard | span | guard]
    view: torch.Tensor
    guard: int  # elements in each guard region
    span: int  # elements between the guards

    @property
    def storage_ptr(self) -> int:
        return self.buffer.untyped_storage().data_ptr()

    def stray_stores(self) -> tuple[int, int]:
        """(elements written before the start, furthest element written past the end)."""
        itemsize = self.buffer.element_size()
        raw = _as_bytes(self.buffer)
        head = raw[: self.guard * itemsize]
        tail = raw[(self.guard + self.span) * itemsize :]
        if bool((head == GUARD_BYTE).all()) and bool((tail == GUARD_BYTE).all()):
            return 0, 0
        before = after = 0
        changed = (head != GUARD_BYTE).nonzero()
        if len(changed):
            before = self.guard - int(changed[0]) // itemsize
        changed = (tail != GUARD_BYTE).nonzero()
        if len(changed):
            after = int(changed[-1]) // itemsize + 1
        return before, after


def _guarded_like(prototype: torch.Tensor, label: str, original_empty) -> GuardedBuffer:
    size, stride = tuple(prototype.shape), tuple(prototype.stride())
    span = _span(size, stride)
    guard = guard_elements(span)
    buffer = original_empty((guard + span + guard,), dtype=prototype.dtype, device=prototype.device)
    _as_bytes(buffer).fill_(GUARD_BYTE)
    interior = buffer[guard : guard + span]
    bits = _UNWRITTEN_BITS.get(prototype.dtype)
    if bits is not None:
        int_dtype, pattern = bits
        interior.view(int_dtype).fill_(pattern)
    view = buffer.as_strided(size, stride, guard)
    if prototype.requires_grad:
        view.requires_grad_(True)
    return GuardedBuffer(label, buffer, view, guard, span)


def _describe(tensor: torch.Tensor) -> str:
    shape = "x".join(str(d) for d in tensor.shape) or "scalar"
    return f"{shape} {str(tensor.dtype).removeprefix('torch.')}"


class AllocationTrap:
    """While active, ``torch.empty``, ``torch.empty_like``, ``torch.empty_strided`` and
    ``Tensor.new_empty`` hand out guarded views (see the module docstring).

    The originals are restored on exit, exceptions included. ``tampered`` lists any of these
    names that the code under test replaced in the meantime.
    """

    _TARGETS = (
        (torch, "empty"),
        (torch, "empty_like"),
        (torch, "empty_strided"),
        (torch.Tensor, "new_empty"),
    )

    def __init__(self) -> None:
        self.buffers: list[GuardedBuffer] = []
        self.tampered: list[str] = []
        self._originals: dict[tuple[Any, str], Any] = {}
        self._own_attribute: dict[tuple[Any, str], bool] = {}
        self._wrappers: dict[tuple[Any, str], Any] = {}

    def __enter__(self) -> AllocationTrap:
        original_empty = torch.empty
        for owner, name in self._TARGETS:
            original = getattr(owner, name)
            self._originals[(owner, name)] = original
            # Tensor.new_empty is inherited from the C base class: put nothing back on exit.
            self._own_attribute[(owner, name)] = name in vars(owner)
            wrapper = self._wrap(original, name, original_empty)
            self._wrappers[(owner, name)] = wrapper
            setattr(owner, name, wrapper)
        return self

    def __exit__(self, *exc_info) -> None:
        for (owner, name), original in self._originals.items():
            if getattr(owner, name) is not self._wrappers[(owner, name)]:
                prefix = "torch.Tensor" if owner is torch.Tensor else "torch"
                self.tampered.append(f"{prefix}.{name}")
            if self._own_attribute[(owner, name)]:
                setattr(owner, name, original)
            else:
                delattr(owner, name)

    def _wrap(self, original, name: str, original_empty):
        trap = self

        def allocate(*args, **kwargs):
            prototype = original(*args, **kwargs)
            if (
                kwargs.get("out") is not None
                or prototype.layout != torch.strided
                or prototype.numel() == 0
                or prototype.device.type not in ("cpu", "cuda")
            ):
                return prototype
            label = f"torch.{name} -> {_describe(prototype)}"
            guarded = _guarded_like(prototype, label, original_empty)
            trap.buffers.append(guarded)
            return guarded.view

        allocate.__name__ = name
        allocate.__doc__ = getattr(original, "__doc__", None)
        return allocate

    def owner_of(self, tensor: torch.Tensor) -> GuardedBuffer | None:
        """The guarded allocation whose storage ``tensor`` lives in, if any."""
        ptr = tensor.untyped_storage().data_ptr()
        return next((b for b in self.buffers if b.storage_ptr == ptr), None)
