"""Copies and casts around the kernels: the steps a replay makes again besides the launches.

A wrapper does more than launch its kernels. It makes an input contiguous (``x =
x.contiguous()``), converts it (``x.float()``), copies an operand into memory whose rows are
aligned (``aligned.copy_(a)``) and casts what its kernel stored (``return y32.to(x.dtype)``).
None of that is the work a grade is for, and none of it can hold that work: a copy or a cast
of a tensor holds that tensor's values, converted, and nothing else. So the recorder writes
each one down as a *step* beside the launches, and a replay makes it again, on its own
tensors:

* **recorded** (the untrusted process, :class:`PlumbingWatch`, a ``TorchDispatchMode`` the
  recorder enters): every ATen ``copy_``, ``clone`` and ``_to_copy`` the call runs outside a
  launch. ``.contiguous()``, ``.clone()``, a ``.reshape()`` that copies, ``.to()``,
  ``.float()``, ``y[...] = t`` and the cast autograd makes of a gradient all reach the
  dispatcher as one of those three. A step is ``{"after": launches made before it, "op",
  "to": view, "from": view}``: two views of recorded buffers, of one shape.
* **replayed** (trusted, :func:`rebuild` and :func:`run`): a step is ``to.copy_(from)`` on the
  replay's own buffers, after the launches recorded before it. Its source must be a tensor the
  replay has: an input, memory the call allocated, a constant, or a buffer steps made, each
  viewed in its own dtype. A step from a tensor PyTorch computed (``torch.softmax(x).to(...)``)
  is not made, so its destination holds only what the replay put there. A buffer the recorder
  calls opaque that a step the replay makes writes into is made afresh: what it held before
  the first step (an allocation's poison, or a ``torch.zeros`` fill), then the steps.

Whatever the worker claims about a step, the replay only copies and converts tensors it made
itself, so a claim can take an answer away and never add one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch

from learning.check.replay.errors import ReplayError
from learning.check.tracing import DispatchMode

MAX_STEPS = 10_000
# The ATen operators a step stands for, and how a message names what made their result.
OPS = {"copy_": "copy_()", "clone": ".clone() or .contiguous()", "_to_copy": ".to()"}
_ATEN = {torch.ops.aten.copy_: "copy_", torch.ops.aten.clone: "clone",
         torch.ops.aten._to_copy: "_to_copy"}  # fmt: skip


@dataclass(frozen=True)
class Step:
    """One recorded step, every field checked (``to`` and ``source`` are ``play._View``)."""

    index: int
    after: int  # launches made before it
    op: str
    to: Any
    source: Any

    @property
    def shown(self) -> str:
        return f"step {self.index} ({OPS[self.op]})"


# --------------------------------------------------------------------------- the replay's side


def rebuild(buffers: tuple, steps: tuple[Step, ...],
            outputs: set) -> tuple[tuple, tuple[Step, ...]]:  # fmt: skip
    """The buffers as a replay makes them, and the steps it makes (see the module docstring).

    A step is made when its source, at that point of the sequence, is not opaque and both its
    views are in their buffers' dtypes (a copy reinterprets no bits). An opaque buffer that a
    made step writes into becomes an allocation, or the constant it held before (``start``):
    for a buffer an output lies in (``outputs``, buffer ids), only zeros, as
    ``learning.check.replaying.fresh_outputs`` keeps them (one value can be an answer).
    """
    kinds = {buffer.id: buffer.kind for buffer in buffers}
    made: set[int] = set()
    kept = []
    for step in steps:
        source, target = buffers[step.source.buffer], buffers[step.to.buffer]
        if (kinds[source.id] == "opaque" or step.source.dtype != source.dtype
                or step.to.dtype != target.dtype):  # fmt: skip
            continue
        if kinds[target.id] == "opaque":
            if target.nbytes % target.dtype.itemsize:
                continue
            kinds[target.id] = "alloc"
            made.add(target.id)
        kept.append(step)
    rebuilt = []
    for buffer in buffers:
        if buffer.id in made:
            kind, fill = buffer.start or ("alloc", None)
            if kind == "const" and buffer.id in outputs and fill != 0:
                kind, fill = "alloc", None
            buffer = dataclasses.replace(buffer, kind=kind, fill=fill)
        rebuilt.append(buffer)
    return tuple(rebuilt), tuple(kept)


def run(step: Step, memories: list) -> None:
    """Make ``step`` on the replay's buffers: ``to.copy_(from)``."""
    target, source = memories[step.to.buffer], memories[step.source.buffer]
    try:
        with torch.no_grad():
            target.view(step.to).copy_(source.view(step.source))
    except RuntimeError as error:  # overlapping views, a write through a stride of 0 ...
        first = (str(error).strip().splitlines() or [""])[0]
        raise ReplayError(f"{step.shown} failed: {first[:200]}") from None


# --------------------------------------------------------------------------- the recorder's side


class PlumbingWatch(DispatchMode):
    """While active, hands ``recorder`` each copy and conversion the call runs.

    Entered by :class:`~learning.check.replay.TraceRecorder`; it calls the recorder's
    ``_writing`` before a ``copy_`` writes (what the destination held until then) and
    ``_step`` after each of the three operators. Recording is a convenience of the untrusted
    process: a step it misses or gets wrong only makes the replay differ."""

    def __init__(self, recorder: Any):
        super().__init__()
        self.recorder = recorder

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        op = _ATEN.get(func.overloadpacket)
        recording = op is not None and self.recorder._records_steps()
        if recording and op == "copy_":
            self.recorder._writing(args[0])
        result = func(*args, **kwargs)
        if recording:
            if op == "copy_":
                self.recorder._step(op, args[0], args[1])
            else:
                self.recorder._step(op, result, args[0])
        return result
