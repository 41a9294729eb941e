"""The oracle gate that keeps checking: before a variant is timed, a moment later, and after.

A figure is only worth reporting if the work it times produced the right answer. A single check
before timing is not enough: a call can return memory it never wrote (which happens to hold a
freed earlier result), finish its output in a thread after returning, find the float64 oracle
in memory and copy it, or do its work only the first time and then return a cached answer.
So every variant goes through these checks, and a failure is recorded with its reason
(``failed``, never timed as fast):

* **Poisoned memory.** The checked call is the variant's second. The outputs of its first
  are filled with :func:`poison` and freed, so memory handed out again holds the mark
  instead of a right answer from before: PyTorch's CUDA caching allocator gives a freed block
  back for the next allocation of its size on the stream. The C library's allocator is less
  predictable, so on the CPU the checked call also runs with ``torch.empty``-style
  allocations pre-filled with a marked NaN (:class:`learning.guards.AllocationTrap`, which
  replaces those functions in ``torch`` while it is active). Not on a GPU: code that keeps a
  reference to an allocation function it saw (the reference's launcher keeps its launches'
  state) would keep the trap's into the timed calls; measured on the H200, a softmax then ran
  2.3 times slower and an RMSNorm backward could not be captured in a CUDA graph. In a timed
  graph the outputs are poisoned before the replay. An element that still holds a mark
  afterwards was never stored: "output: 12 of 4096 elements never stored".
* **The oracle after the call.** The float64 oracle is computed from the inputs only after
  the call returned, and dropped before the next one: there is nothing to copy during a call.
* **A moment later.** The outputs are copied as soon as the call returns, compared with the
  oracle, and read again :data:`SETTLE_S` later: an output that changed in between was
  finished by work nobody timed (a thread, a side stream).
* **After timing, on fresh inputs** (:func:`refill` and the engine's ``recheck`` phase): the
  inputs the timed calls read are refilled in place with new values and the timed callable
  runs once more (a graph: replayed once). A cache, or work left out of the timed graph, gives
  the old answer or none.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from learning import correctness, ops
from learning.guards import AllocationTrap, unwritten_mask

SETTLE_S = 0.05  # how long after a call its outputs are read again

# Same-size integer types, to fill or read a float tensor's bits without changing its strides.
_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _bits(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.detach().view(_BITS[tensor.element_size()])


def poison(tensor: torch.Tensor) -> None:
    """Fill ``tensor`` with all-ones bits: a NaN in every float format, and one that no
    arithmetic produces (a computed NaN has a short payload), so "still all ones" means
    "never stored"."""
    with torch.no_grad():
        bits = _bits(tensor)
        bits.fill_(255 if bits.dtype == torch.uint8 else -1)


def never_stored(tensor: torch.Tensor) -> int:
    """Elements of ``tensor`` that still hold a mark: :func:`poison`'s, or the marked NaN of
    :mod:`learning.guards` (a replay's poisoned allocations)."""
    if tensor.numel() == 0 or tensor.element_size() not in _BITS:
        return 0
    bits = _bits(tensor)
    marked = bits == (255 if bits.dtype == torch.uint8 else -1)
    trapped = unwritten_mask(tensor)
    if trapped is not None:
        marked = marked | trapped.view(tensor.shape)
    return int(marked.sum())


def tensors(outputs: object) -> list[torch.Tensor]:
    """The plain tensors among a call's outputs (anything else is the comparison's to refuse)."""
    if type(outputs) is torch.Tensor:
        return [outputs]
    if isinstance(outputs, tuple | list):
        return [t for t in outputs if type(t) is torch.Tensor]
    return []


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def poisoner(inputs: dict) -> Callable[[torch.Tensor], None]:
    """:func:`poison`, except on memory that belongs to one of ``inputs`` (an output that is
    a view of an input must not destroy the input)."""
    owned = {v.untyped_storage().data_ptr() for v in inputs.values() if torch.is_tensor(v)}

    def apply(tensor: torch.Tensor) -> None:
        if type(tensor) is torch.Tensor and tensor.untyped_storage().data_ptr() not in owned:
            poison(tensor)

    return apply


def trapped(call: Callable[[], object], device: str = "cpu") -> object:
    """``call()``, on the CPU with every Python-level ``torch.empty``-style allocation
    poisoned (see the module docstring for why not on a GPU)."""
    if device != "cpu":
        return call()
    with AllocationTrap():
        return call()


def first_call(call: Callable[[], object], inputs: dict) -> None:
    """One call whose outputs are then poisoned and dropped (see the module docstring)."""
    apply = poisoner(inputs)
    for tensor in tensors(call()):
        apply(tensor)


@dataclass(frozen=True)
class Check:
    """The verdict on one call's outputs, and the report's correctness record for it."""

    passed: bool
    reason: str | None
    max_abs_error: float | None = None
    tolerance_used: float | None = None

    def record(self) -> dict:
        return {
            "passed": self.passed,
            "max_abs_error": self.max_abs_error,
            "tolerance_used": self.tolerance_used,
            "reason": self.reason,
        }


def check_outputs(
    spec: ops.OpSpec,
    inputs: dict,
    outputs: Sequence[object],
    dtype: torch.dtype,
    device: str,
    *,
    settle_s: float = SETTLE_S,
) -> Check:
    """Check the outputs a call just returned (see the module docstring, first three points)."""
    synchronize(device)
    returned = time.perf_counter()
    outputs = tuple(outputs)
    labels = correctness.output_labels(spec)
    plain = [t for t in outputs if type(t) is torch.Tensor]
    copies = tuple(t.detach().clone() if type(t) is torch.Tensor else t for t in outputs)
    unwritten = []
    for label, tensor in zip(labels, copies, strict=False):
        if type(tensor) is torch.Tensor and (count := never_stored(tensor)):
            unwritten.append(f"{label}: {count} of {tensor.numel()} elements never stored")
    expected = spec.expected(inputs)  # only now: the call has returned
    verdicts = correctness.compare_all(
        copies, expected, spec.tolerances[dtype], dtype=dtype, labels=labels
    )
    del expected
    errors = [v.max_abs_error for v in verdicts if v.max_abs_error is not None]
    used = [v.tolerance_used for v in verdicts if v.tolerance_used is not None]
    figures = dict(max_abs_error=max(errors, default=None), tolerance_used=max(used, default=None))
    if unwritten:
        return Check(False, f"{'; '.join(unwritten)} (the call did not write them)", **figures)
    if not all(v.passed for v in verdicts):
        reason = "; ".join(v.reason for v in verdicts if not v.passed)
        return Check(False, f"failed the float64 oracle: {reason}", **figures)
    time.sleep(max(0.0, returned + settle_s - time.perf_counter()))
    synchronize(device)
    for label, now, then in zip(labels, plain, copies, strict=False):
        if not torch.equal(_bits(now), _bits(then)):
            changed = int((_bits(now) != _bits(then)).sum())
            return Check(
                False,
                f"{label}: {changed} of {now.numel()} elements changed after the call returned "
                "(work that finishes later, in a thread or on another stream, is not in the "
                "timing)",
                **figures,
            )
    return Check(True, None, **figures)


def refill(inputs: dict, fresh: dict) -> None:
    """Copy ``fresh``'s values into ``inputs``' tensors in place (the very tensors a timed
    graph reads); non-tensor inputs (an epsilon) stay as they are."""
    with torch.no_grad():
        for name, value in inputs.items():
            if torch.is_tensor(value):
                value.copy_(fresh[name])
