"""Tripwires around one call of a learner's kernel: guarded memory, launch counting, tampering.

The kernel checker (``learning.check.kernels``) wraps every call in these:

* :class:`AllocationTrap` turns each ``torch.empty``-style allocation the implementation makes
  into a view inside a larger buffer. The view is pre-filled with a NaN of a recognisable bit
  pattern (:data:`UNWRITTEN`), so a value the kernel never stored stays recognisable; the
  regions before and after hold a sentinel byte, so a store past either end shows up.
* :func:`place_inputs` puts the inputs inside buffers whose guard regions hold NaN: an
  unmasked load past the end of a row reads NaN and poisons the result.
* :class:`LaunchCounter` counts Triton kernel launches (interpreted or compiled), so a result
  that came from PyTorch alone is caught.
* :class:`AttributeWatch` snapshots timers, the checker and the registry, and puts back
  anything the implementation replaced.

Triton's interpreter uses real pointers and does not bounds-check, which is why the guards
are large enough for a whole block past the end; the checker runs in a subprocess, so a store
beyond even that crashes the worker, never the checker.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import torch
from triton.runtime.interpreter import InterpretedFunction
from triton.runtime.jit import JITFunction

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


# --------------------------------------------------------------------------- tampering

# What an implementation has no business replacing: timers, the checker and its policy, the
# registry, and the torch functions the oracle and the comparison are built from.
_WATCHED = (
    "time",
    "gc",
    "torch",
    "torch.cuda",
    "torch.autograd",
    "torch.testing",
    "torch.nn.functional",
    "triton",
    "triton.testing",
    "learning.runtime",
    "learning.correctness",
    "learning.ops",
    "learning.check.model",
    "learning.check.kernels",
    "learning.check.kernel_hints",
    "learning.check.kernel_guards",
)


def _watched_owners() -> list[tuple[str, Any]]:
    owners: list[tuple[str, Any]] = []
    for name in _WATCHED:
        try:
            owners.append((name, importlib.import_module(name)))
        except ImportError:
            continue
    owners += [
        ("torch.Tensor", torch.Tensor),
        ("torch.Tensor", torch._C.TensorBase),
        ("torch.cuda.Event", torch.cuda.Event),
        ("torch.autograd.Function", torch.autograd.Function),
        ("triton.runtime.jit.JITFunction", JITFunction),
        ("triton.runtime.interpreter.InterpretedFunction", InterpretedFunction),
    ]
    from learning import ops

    for spec in ops.OPS.values():
        owners.append((f"learning.ops.OPS[{spec.name!r}]", spec))
        for dtype, tolerance in spec.tolerances.items():
            owners.append((f"learning.ops.OPS[{spec.name!r}].tolerances[{dtype}]", tolerance))
    return owners


def _attributes(owner: Any) -> dict[str, Any]:
    """Public attributes; of a module only the callables (its data may change legitimately,
    e.g. ``torch.cuda.default_generators`` when CUDA initialises)."""
    is_module = isinstance(owner, ModuleType)
    return {
        k: v
        for k, v in vars(owner).items()
        if not k.startswith("_") and (callable(v) or not is_module)
    }


class AttributeWatch:
    """Snapshot of what an implementation must not replace; :meth:`check_and_restore`
    names every replaced attribute and puts the original back."""

    def __init__(self) -> None:
        self._owners = _watched_owners()
        self._snapshot = [(label, owner, _attributes(owner)) for label, owner in self._owners]
        self._tolerances = {
            name: dict(spec.tolerances) for name, spec in _spec_table().items()
        }

    def check_and_restore(self) -> list[str]:
        modified: list[str] = []
        for label, owner, before in self._snapshot:
            after = vars(owner)
            for name, value in before.items():
                if after.get(name, _MISSING) is not value:
                    modified.append(f"{label}.{name}")
                    _force_setattr(owner, name, value)
        for name, spec in _spec_table().items():
            if dict(spec.tolerances) != self._tolerances[name]:
                modified.append(f"learning.ops.OPS[{name!r}].tolerances")
        return modified


_MISSING = object()


def _spec_table():
    from learning import ops

    return ops.OPS


def _force_setattr(owner: Any, name: str, value: Any) -> None:
    try:
        setattr(owner, name, value)
    except (AttributeError, TypeError):  # frozen dataclasses
        object.__setattr__(owner, name, value)
