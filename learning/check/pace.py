"""How much slower than the course's reference machine this one runs now: what every time
limit of the checker is multiplied by.

The checker's time limits (a call into the learner's code, an import, a replay, the whole
exercise) were chosen on the course's reference machine, a two-core laptop running nothing
else. A slower laptop, or the same one under load (a full test run, a class graded while other
work runs), takes longer for an honest kernel too, and a fixed limit would cost it points. So
the trusted side times a fixed piece of work once a run (:func:`measure`) and multiplies every
limit by how much longer it took than on the reference machine (:attr:`Pace.slowdown`): never
less than 1, so a faster machine keeps the limits as they are, and at most
:data:`MAX_SLOWDOWN`, so a kernel that never returns is still stopped.

The work is a loop of plain Python arithmetic, the kind of work Triton's interpreter and the
checks spend their time on, timed by the wall clock, so it sees a slower CPU and a CPU shared
with other processes alike. It lasts about 65 ms on the reference machine: long enough that
the scheduler shares the CPU as it does over a whole run (on a loaded CPU a process that has
just woken up runs first, for a few milliseconds), short enough for every run to pay. It runs
in three slices and counts the slowest, as if all of it had run at that pace: a moment of
other work finishing is no reason to cut the limits, so an error errs long.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

ITERATIONS = 1_000_000
SLICES = 3
REFERENCE_S = 0.065  # the work's time on the reference machine, nothing else running
MAX_SLOWDOWN = 10.0


@dataclass(frozen=True)
class Pace:
    """One timing of the work: wall-clock and CPU seconds."""

    wall_s: float
    cpu_s: float

    @property
    def slowdown(self) -> float:
        """Wall-clock time over the reference machine's, within [1, MAX_SLOWDOWN]: what the
        checker's limits are multiplied by."""
        return _factor(self.wall_s)

    @property
    def cpu_slowdown(self) -> float:
        """The same for CPU time, which a shared CPU inflates less (but still: a busy sibling
        hyperthread or a lower clock), for a limit on a process's CPU time."""
        return _factor(self.cpu_s)


def _factor(seconds: float) -> float:
    return min(MAX_SLOWDOWN, max(1.0, seconds / REFERENCE_S))


def _work(iterations: int) -> int:
    total = 0
    for number in range(iterations):
        total += (number * number) % 7
    return total


def measure() -> Pace:
    """Time the work once, now: its slowest slice, times the number of slices."""
    walls, cpus = [], []
    for _ in range(SLICES):
        wall, cpu = time.perf_counter(), time.process_time()
        _work(ITERATIONS // SLICES)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return Pace(max(walls) * SLICES, max(cpus) * SLICES)


def slowdown() -> float:
    """The factor for the checker's limits, measured now (see :attr:`Pace.slowdown`)."""
    return measure().slowdown


__all__ = ["MAX_SLOWDOWN", "REFERENCE_S", "Pace", "measure", "slowdown"]
