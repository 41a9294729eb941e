"""A Gluon GEMM's synchronization, replayed in Python under random interleavings.

A kernel's partitions (the producer warp, the consumer warp groups) are written as Python
generators that yield each mbarrier wait as ``(barrier, parity)``, or a string naming a rule
the partition found broken. :func:`interleave` runs them in a random order, one step of a
partition whose wait passes at a time, as the hardware may.

An mbarrier here counts arrivals; every ``count`` of them complete a phase, and a wait on
parity p passes when the count of completed phases has the other parity: the rule the
hardware applies, which cannot tell a count from the same count plus two.
"""

from __future__ import annotations

import random
from collections.abc import Generator


class Barrier:
    def __init__(self, count: int = 1) -> None:
        self.count = count  # arrivals a phase needs
        self.arrivals = 0

    def arrive(self) -> None:
        self.arrivals += 1

    @property
    def completed(self) -> int:
        return self.arrivals // self.count

    def passes(self, parity: int) -> bool:
        return self.completed % 2 != parity


def interleave(partitions: dict[str, Generator], seed: int) -> str:
    """Run the partitions in one random interleaving: "" if none reported a broken rule,
    else the first report (or a deadlock: every unfinished partition waits)."""
    shuffle = random.Random(seed)
    running = dict(partitions)
    waiting = {name: None for name in running}
    while running:
        free = [n for n in running if waiting[n] is None or waiting[n][0].passes(waiting[n][1])]
        if not free:
            return "deadlock: every partition waits"
        name = shuffle.choice(free)
        try:
            step = next(running[name])
        except StopIteration:
            del running[name]
            continue
        if isinstance(step, str):
            return step
        waiting[name] = step
    return ""
