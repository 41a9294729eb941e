"""The recorder: every Triton launch of one call, written down as plain data."""

from __future__ import annotations

from pathlib import Path

import torch


class TraceRecorder:
    """Records the Triton launches made while it is active (a context manager).

    Used inside the process that runs the learner's code, so it is a convenience, not a guard:
    whatever it writes down is checked by replaying it. Enter it *inside* an
    :class:`~learning.check.kernel_guards.AllocationTrap` when both are used
    (``with trap, recorder:``), so that it sees the guarded allocations the trap hands out.
    """

    def __init__(self, package_root: Path):
        raise NotImplementedError

    def add_input(self, name: str, tensor: torch.Tensor) -> None:
        """Declare an input of the call: its memory becomes buffer ``input:<name>``."""
        raise NotImplementedError

    def __enter__(self) -> TraceRecorder:
        raise NotImplementedError

    def __exit__(self, *exc_info) -> None:
        raise NotImplementedError

    def trace(self) -> dict:
        """``{"buffers": [...], "launches": [...]}``, JSON-serialisable."""
        raise NotImplementedError

    def describe_outputs(self, outputs: tuple) -> list[dict]:
        """Each output as a view (offset, shape, strides, dtype) of a recorded buffer."""
        raise NotImplementedError
