"""A wall-clock limit for a test that times something, in seconds of the course's reference
machine: the test measures this machine's pace (``learning.check.pace``) before and after what
it times, and the limit is multiplied by the slower of the two, as the checker multiplies its
own limits. A loaded or slow machine then takes longer and is allowed longer; a test never
asserts a fixed number of seconds.

    with Stopwatch() as watch:
        run_the_thing()
    assert watch.elapsed <= watch.limit(10), watch.said(10)
"""

from __future__ import annotations

import time

from learning.check import pace


class Stopwatch:
    def __enter__(self) -> Stopwatch:
        self.before = pace.measure()
        self._started = time.perf_counter()
        self.elapsed = 0.0
        return self

    def __exit__(self, *exc_info) -> None:
        self.elapsed = time.perf_counter() - self._started
        self.after = pace.measure()

    @property
    def slowdown(self) -> float:
        return max(self.before.slowdown, self.after.slowdown)

    def limit(self, reference_s: float) -> float:
        """``reference_s`` seconds of the reference machine, on this one as it ran."""
        return reference_s * self.slowdown

    def said(self, reference_s: float) -> str:
        return (f"took {self.elapsed:.1f} s; the limit is {reference_s:g} s on the reference "
                f"machine, {self.limit(reference_s):.1f} s at this machine's pace "
                f"(x{self.slowdown:.2f})")  # fmt: skip
