"""The GPU's clocks, power, temperature and throttle reasons while kernel-bench samples.

A background thread reads NVML every :data:`INTERVAL_S` (10 ms) during the sample phase and
keeps each reading with its time. The engine notes when each round of a case began and ended;
:meth:`Sampler.round_row` turns the readings of one round (the nearest reading, for a round
shorter than the interval) into the compact row ``learning.report.telemetry`` defines, and
that module's rule decides which rounds ran throttled. NVML's calls are C calls through
ctypes, which release the interpreter's lock, so the thread does not hold up the timed loop.

Why read during sampling and not only before and after: on the H200 a GEMM runs at the power
limit, where the clock, and with it a figure, depends on what ran just before; a reading from
before the run says nothing about the round it would explain. (tritonbench logs SM clock,
power and temperature every 10 ms; nvbench discards samples taken below 75% of the default
clock.)
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable

INTERVAL_S = 0.010

Reading = tuple  # (sm MHz, memory MHz, power W, temperature C, reasons), each or None


def nvml_reader() -> tuple[Callable[[], Reading] | None, str | None]:
    """A function that reads the GPU's state now, or None and the reason there is none."""
    try:
        from learning.bench.machine import nvml_handle

        pynvml, handle = nvml_handle()
    except Exception as error:  # no pynvml, no driver
        return None, f"NVML is not available ({type(error).__name__}: {error})"
    reasons_of = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
        pynvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None
    )

    def asked(function, *args):
        try:
            return function(handle, *args)
        except Exception:
            return None

    def read() -> Reading:
        power = asked(pynvml.nvmlDeviceGetPowerUsage)  # milliwatts
        return (
            asked(pynvml.nvmlDeviceGetClockInfo, pynvml.NVML_CLOCK_SM),
            asked(pynvml.nvmlDeviceGetClockInfo, pynvml.NVML_CLOCK_MEM),
            None if power is None else power / 1000,
            asked(pynvml.nvmlDeviceGetTemperature, pynvml.NVML_TEMPERATURE_GPU),
            asked(reasons_of) if reasons_of else None,
        )

    try:
        read()
    except Exception as error:
        return None, f"NVML could not be read ({type(error).__name__}: {error})"
    return read, None


class Sampler:
    """Readings every ``interval_s`` between :meth:`start` and :meth:`stop`, in a thread."""

    def __init__(self, read: Callable[[], Reading] | None, reason: str | None = None,
                 interval_s: float = INTERVAL_S):  # fmt: skip
        self.read, self.reason, self.interval_s = read, reason, interval_s
        self.times: list[float] = []
        self.readings: list[Reading] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def for_device(cls, device: str) -> Sampler:
        if device != "cuda":
            return cls(None, "no GPU: the run used the CPU interpreter")
        read, reason = nvml_reader()
        return cls(read, reason)

    @property
    def available(self) -> bool:
        return self.read is not None

    def start(self) -> None:
        if self.read is None or self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="kernel-bench telemetry",
                                        daemon=True)  # fmt: skip
        self._thread.start()

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                reading = self.read()
            except Exception:
                reading = None
            if reading is not None:
                self.times.append(time.perf_counter())
                self.readings.append(reading)
            self._stop.wait(self.interval_s)

    def round_row(self, start: float, end: float) -> list | None:
        """The row of ``learning.report.telemetry.ROUND_FIELDS`` for a round from ``start``
        to ``end`` (``time.perf_counter``): the readings taken during it, or the nearest."""
        if not self.times:
            return None
        first, last = bisect.bisect_left(self.times, start), bisect.bisect_right(self.times, end)
        if first < last:
            chosen = self.readings[first:last]
        else:  # a round shorter than the interval: the reading nearest to it
            middle = (start + end) / 2
            near = min((i for i in (first - 1, first) if 0 <= i < len(self.times)),
                       key=lambda i: abs(self.times[i] - middle))  # fmt: skip
            chosen = [self.readings[near]]

        def column(index: int, pick) -> float | int | None:
            values = [r[index] for r in chosen if r[index] is not None]
            return pick(values) if values else None

        reasons = [r[4] for r in chosen if r[4] is not None]
        mask = 0
        for value in reasons:
            mask |= int(value)
        return [column(0, min), column(1, min), column(2, max), column(3, max),
                mask if reasons else None]  # fmt: skip

    def record(self, interval_s: float | None = None) -> dict:
        """The run-level part of the report's ``telemetry``."""
        return {
            "method": "nvml" if self.available else None,
            "reason": self.reason,
            "interval_ms": (interval_s or self.interval_s) * 1e3 if self.available else None,
            "readings": len(self.readings),
        }
