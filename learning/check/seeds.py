"""The checker's seeds: fresh every run, or replayed from ``LEARNING_CHECK_SEED``.

Every check draws its inputs from the run's seed, printed beside a failure. Setting the
variable to that number runs the same inputs again: the foundations and measurement checks
seed their random draws with it; the kernel checks derive each input's seed from it
(:func:`learning.check.remote.derive_seed`), the hidden inputs of the replays included. The
seed is read in the checker's process only: the worker that runs the learner's code is never
told it. A value that is not a whole number is refused by the command line in one line
(:func:`replay_seed` raises ``ValueError``).
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
