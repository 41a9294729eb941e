"""Argument types the probe scripts share (beyond ``_records.positive_int``).

Kept apart from ``_records.py``: every recorded sweep fingerprints that file, so a new helper
there would make the records stale without changing anything they measured.
"""

from __future__ import annotations

import argparse


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
