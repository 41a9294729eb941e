"""Do the checker's time limits follow the machine's pace, so that load never costs an honest
call its points (``learning.check.pace``)?

Each limit a check names is in seconds of the course's reference machine; a run measures how
much slower this machine is now and multiplies every limit by that. The load below is real:
busy processes, each in a session of its own (so that the scheduler's per-session groups share
the CPU among them as among learners' and graders' processes), ended by their ids.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
import uuid
from contextlib import contextmanager

import pytest

from learning.check import pace
from learning.check.model import CheckResult
from learning.check.remote import RemoteModule, Session
from learning.check.runner import check_exercise

BUSY_PER_CPU = 3  # about 4x: each CPU shared by three busy processes and the one measured


@contextmanager
def loaded(per_cpu: int = BUSY_PER_CPU):
    """The machine's CPUs busy with ``per_cpu`` spinning processes each, while the block runs
    (from when every one of them has started spinning)."""
    count = per_cpu * (os.cpu_count() or 1)
    spin = "import sys\nsys.stdout.write('.')\nsys.stdout.flush()\nwhile True:\n    pass\n"
    busy = [subprocess.Popen([sys.executable, "-c", spin], stdout=subprocess.PIPE,
                             start_new_session=True) for _ in range(count)]  # fmt: skip
    try:
        for process in busy:
            process.stdout.read(1)
        yield
    finally:
        for process in busy:
            process.kill()
            process.wait()
            process.stdout.close()


def package_with(tmp_path, source: str) -> str:
    """A throwaway package holding ``work.py``; its name."""
    name = f"paced_{uuid.uuid4().hex[:8]}"
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / name / "work.py").write_text(textwrap.dedent(source))
    return name


NAP = """
    import time


    def nap(seconds):
        time.sleep(seconds)
        return seconds
"""


def test_a_request_limit_is_the_checks_limit_times_the_pace(tmp_path):
    """A call that sleeps 1 s under a limit of 0.5 s (of the reference machine): stopped at
    the reference machine's pace, returned at four times slower, with the limit said in this
    machine's seconds."""
    package = package_with(tmp_path, NAP)
    with Session("measurement", package, extra_path=[tmp_path], slowdown=1.0) as session:
        outcome = RemoteModule(session, f"{package}.work").call("nap", (1.0,), {}, limit_s=0.5)
        assert outcome.timed_out
    with Session("measurement", package, extra_path=[tmp_path], slowdown=4.0) as session:
        assert session.scaled(0.5) == 2.0
        outcome = RemoteModule(session, f"{package}.work").call("nap", (1.0,), {}, limit_s=0.5)
        assert outcome.returned and outcome.value == 1.0


def test_a_faster_machine_keeps_the_limits_and_a_stalled_one_is_bounded():
    assert pace.Pace(pace.REFERENCE_S / 3, 0.0).slowdown == 1.0
    assert pace.Pace(pace.REFERENCE_S * 2.5, 0.0).slowdown == 2.5
    assert pace.Pace(pace.REFERENCE_S * 1000, 0.0).slowdown == pace.MAX_SLOWDOWN
    with Session("measurement", "reference", slowdown=0.5) as session:
        assert session.slowdown == 1.0  # never below the limits as the checks name them


def test_the_pace_sees_a_loaded_machine():
    """Timed with every CPU shared by busy processes, does the work take clearly longer than
    just before, on this machine, whatever else runs on it? (The fastest of three timings
    each: other work that comes and goes can only make one slower.)"""
    before = min(pace.measure().wall_s for _ in range(3))
    with loaded():
        during = min(pace.measure().wall_s for _ in range(3))
    assert during > 1.5 * before, (before, during)


def test_a_run_scales_the_exercise_limit_and_every_request_by_one_pace(monkeypatch):
    """check_exercise measures the pace once and gives it to the session: the manifest's
    whole-exercise limit and each request's limit are multiplied by it."""
    module = importlib.import_module("learning.check.foundations")
    seen = []

    def run(exercise, impl, session):
        seen.append((session.slowdown, session.time_limit_s, session.scaled(5.0)))
        return [CheckResult("looked", True, 1.0, "")]

    monkeypatch.setattr(module, "run", run)
    monkeypatch.setattr(pace, "slowdown", lambda: 4.0)
    check_exercise("tensors", "reference", time_limit_s=60)
    assert seen == [(4.0, 240.0, 20.0)]


WORK = """
    def work(rounds):
        total = 0
        for _ in range(rounds):
            for number in range({iterations}):
                total += (number * number) % 7
        return total
"""


@pytest.mark.slow
def test_an_honest_call_within_its_limit_on_the_reference_machine_passes_under_load(tmp_path):
    """A call of about 1 s of work on the reference machine (15 times the pace's own work),
    under a limit of 2.5 s: with every CPU shared four ways it takes about 4 s. A limit fixed
    in seconds stops it; the run's measured pace lets it return."""
    package = package_with(tmp_path, WORK.format(iterations=pace.ITERATIONS))
    rounds = 15  # 15 x 65 ms of the reference machine
    with loaded():
        with Session("measurement", package, extra_path=[tmp_path], slowdown=1.0) as fixed:
            stopped = RemoteModule(fixed, f"{package}.work").call("work", (rounds,), {},
                                                                 limit_s=2.5)  # fmt: skip
        with Session("measurement", package, extra_path=[tmp_path]) as paced:
            finished = RemoteModule(paced, f"{package}.work").call("work", (rounds,), {},
                                                                  limit_s=2.5)  # fmt: skip
    assert stopped.timed_out, "the load did not slow the call past a fixed limit"
    assert finished.returned, f"stopped at {paced.scaled(2.5):g} s (x{paced.slowdown:.2f})"
