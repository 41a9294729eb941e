"""Argument types the probe scripts share (beyond ``_records.positive_int``).

Kept apart from ``_records.py``: every recorded sweep fingerprints that file, so a new helper
there would make the records stale without changing anything they measured.
"""

from __future__ import annotations

import argparse

# isort: split
from learning import ops  # selects the Triton backend before triton is imported


def shape_argument(text: str) -> tuple[int, int]:
    """An argparse type: ``ROWSxCOLS``, two whole numbers > 0, or one line saying what was given."""
    parts = text.lower().split("x")
    try:
        shape = tuple(int(part) for part in parts)
    except ValueError:
        shape = ()
    if len(shape) != 2 or min(shape) < 1:
        raise argparse.ArgumentTypeError(f"expected ROWSxCOLS such as 1024x1024, got {text!r}")
    return shape


def forward_ops() -> tuple[str, ...]:
    """The registry's forward ops that have no GEMM: what the every-case target covers."""
    return tuple(name for name in ops.GROUPS["all"] if not ops.get(name).is_gemm)


def parse_shape(spec: ops.OpSpec, text: str) -> tuple[int, ...]:
    """``ROWSxCOLS`` as a shape ``spec`` accepts; ValueError saying what was wrong."""
    try:
        shape = tuple(int(part) for part in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"expected ROWSxCOLS of whole numbers, got {text!r}") from None
    return spec.validate_shape(shape)
