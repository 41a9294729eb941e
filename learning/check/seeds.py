"""The checker's seeds: fresh every run, or replayed from ``LEARNING_CHECK_SEED``.

Every check draws its inputs from a seed it prints beside a failure. Setting the variable to
that number runs the same inputs again: the foundations and measurement checks use it as the
run's seed; the kernel checks number their cases from it (``n+1``, ``n+2``, ...), so the value
they print for a failing run is the start they report. A value that is not a whole number is
refused by the command line in one line (:func:`replay_seed` raises ``ValueError``).
"""

from __future__ import annotations

import os
import secrets

SEED_VARIABLE = "LEARNING_CHECK_SEED"


def replay_seed() -> int | None:
    """The seed ``LEARNING_CHECK_SEED`` asks to replay, or None when it is unset or empty."""
    text = os.environ.get(SEED_VARIABLE, "").strip()
    if not text:
        return None
    if not text.isdigit():
        raise ValueError(f"{SEED_VARIABLE} must be a whole number >= 0, got {text!r}")
    return int(text)


def run_seed(bound: int) -> int:
    """The replayed seed, or a fresh one below ``bound``."""
    seed = replay_seed()
    return seed if seed is not None else secrets.randbelow(bound)


def replay_note(seed: int) -> str:
    """The line a failure ends with: the seed, and how to run its inputs again."""
    return f"(seed {seed}: {SEED_VARIABLE}={seed} replays these inputs)"
