"""Replaying a trace with the extracted kernels, on inputs the recording never saw."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from learning.check.replay.extract import KernelBundle


@dataclass
class ReplayResult:
    """What a replay stored, and what went wrong around it (poison fill only)."""

    outputs: tuple[torch.Tensor, ...]  # the described outputs, views of the replayed buffers
    unwritten: list[str] = field(default_factory=list)  # "output 0: 12 of 4096 elements ..."
    stray_stores: list[str] = field(default_factory=list)  # stores into any buffer's guards
    inputs_changed: list[str] = field(default_factory=list)  # inputs the kernels wrote to


def replay(bundle: KernelBundle, trace: dict, outputs: list[dict],
           inputs: dict[str, torch.Tensor | object], *, device: str,
           fill: str = "poison") -> ReplayResult:  # fmt: skip
    """Make the recorded launches again with the bundle's kernels, on ``inputs``.

    ``fill="poison"`` fills allocations with the checker's marked NaN inside guard regions and
    puts the inputs inside NaN guards; ``fill="none"`` allocates plainly (for timing).
    Raises :class:`~learning.check.replay.ReplayError` for a trace it cannot replay.
    """
    raise NotImplementedError


class ReplayProgram:
    """A trace as a callable: ``program(**inputs)`` replays it on any inputs of its layout.

    The kernels are loaded once; every call allocates fresh buffers and launches, with no host
    synchronisation, so a call can be captured in a CUDA graph.
    """

    def __init__(self, bundle: KernelBundle, trace: dict, outputs: list[dict], *, device: str):
        raise NotImplementedError

    def __call__(self, **inputs) -> tuple[torch.Tensor, ...]:
        raise NotImplementedError
