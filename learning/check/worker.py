"""The check process: ``python -m learning.check.worker EXERCISE IMPL [CHECK_MODULE]``.

The checker (``learning.check.runner``) starts this in a subprocess with a time limit, so
nothing the learner's code does (print, raise, loop forever, crash the interpreter) can crash
or hang the checker. The protocol:

* the learner's code may print anything: file descriptor 1 is pointed at stderr before any
  check runs, so ``print`` and C-level writes alike end up there;
* the results go to the original stdout as one line, :data:`RESULT_MARKER` followed by a JSON
  list of :class:`~learning.check.model.CheckResult` dicts; the runner reads only that line;
* no result line (a crash, a timeout, ``os._exit``) is turned into a failed check by the runner.

:func:`call_with_limit` is the guard check modules wrap each call into learner code with: it
gives the call its own time limit (SIGALRM where the platform has it) and turns any exception,
``SystemExit`` included, into an :class:`Outcome`.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from learning.check.model import CheckResult

RESULT_MARKER = "@@learning.check results@@ "


@dataclass(frozen=True)
class Outcome:
    """What one guarded call did: returned ``value``, raised ``error``, or ran out of time."""

    value: Any = None
    error: BaseException | None = None
    timed_out: bool = False

    @property
    def returned(self) -> bool:
        return self.error is None and not self.timed_out


class _CallTimeout(BaseException):
    """Raised inside the guarded call when its time is up (a BaseException, like SystemExit,
    so that ``except Exception`` in the learner's code does not swallow it)."""


def call_with_limit(function: Callable[..., Any], /, *args, limit_s: float, **kwargs) -> Outcome:
    """Call ``function(*args, **kwargs)`` with at most ``limit_s`` seconds to return.

    The limit needs SIGALRM on the main thread (Linux, macOS); elsewhere the call runs
    unlimited and the check process's own time limit is the backstop.
    """
    limited = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not limited:
        return _call(function, args, kwargs)

    def on_alarm(signum, frame):
        raise _CallTimeout

    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        # Re-armed every 0.1 s after the first alarm, in case the learner's code catches one.
        signal.setitimer(signal.ITIMER_REAL, limit_s, 0.1)
        try:
            return _call(function, args, kwargs)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _CallTimeout:  # the alarm fired after the call returned but before it was disarmed
        return Outcome(timed_out=True)
    finally:
        signal.signal(signal.SIGALRM, previous)


def _call(function, args, kwargs) -> Outcome:
    try:
        return Outcome(value=function(*args, **kwargs))
    except _CallTimeout:
        return Outcome(timed_out=True)
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # SystemExit too: the learner's code may call sys.exit()
        return Outcome(error=error)


def run_checks(exercise: str, impl: str, check: str | None = None) -> list[CheckResult]:
    """Run the exercise's check module (``check``, else the manifest's); never raises."""
    from learning import manifest

    try:
        spec = manifest.load().exercise(exercise)
    except manifest.ManifestError as error:
        if check is None:
            return [_failure("manifest", 0.0, str(error))]
        spec = manifest.Exercise(exercise, check, (), (), 1.0, 1.0)
    check = check or spec.check
    try:
        module = importlib.import_module(check)
        results = module.run(exercise, impl)
    except Exception as error:  # a fault in the check module, not in the learner's code
        frames = traceback.format_exception(error, limit=-3)
        return [
            _failure(
                "check module",
                spec.points,
                f"the check module {check} failed before it could grade anything: "
                f"{type(error).__name__}: {error}\n"
                "This is most likely a fault in the checks, not in your code; report it with:\n"
                + "".join(frames).rstrip(),
            )
        ]
    if not isinstance(results, list) or not all(isinstance(r, CheckResult) for r in results):
        message = f"{check}.run did not return a list of CheckResult"
        return [_failure("check module", spec.points, message)]
    return results


def _failure(name: str, points: float, message: str) -> CheckResult:
    return CheckResult(name=name, passed=False, max_points=points, message=message)


def one_intra_op_thread() -> None:
    """Run torch's CPU operators on this thread alone.

    On the course's CPU build of torch (2.13, two cores), in about a third of processes the
    second intra-op thread computes float32 ``exp`` to a relative error of 1.5e-4 instead of
    6e-8 (the half of a 37 x 781 tensor that thread takes; 5 of 12 fresh processes in one
    count, 0 of 10 with one thread). A correct ``naive_softmax`` then failed the float32
    tolerance in a quarter of check runs. This is pytorch/pytorch#188792: oneMKL picks each
    VML function's kernel on its first call, and first calls racing on several threads can
    run its low-accuracy one for a thread's chunk (the next call is right). One thread gives
    the same, accurate result in every process; the check inputs are small, so it costs
    nothing that matters (and nothing on a GPU, whose kernels do not use these threads).
    """
    import torch

    torch.set_num_threads(1)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (2, 3):
        usage = "usage: python -m learning.check.worker EXERCISE IMPL [CHECK_MODULE]"
        print(usage, file=sys.stderr)
        return 2
    exercise, impl, check = (*argv, None)[:3]
    sys.stdout.flush()
    results_stream = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # from here on, anything written to stdout goes to stderr
    sys.stdout = sys.stderr
    one_intra_op_thread()
    results = run_checks(exercise, impl, check)
    payload = json.dumps([result.as_dict() for result in results])
    results_stream.write(RESULT_MARKER + payload + "\n")
    results_stream.flush()
    sys.stderr.flush()
    # Skip interpreter shutdown: a thread or an atexit hook the learner's code left behind must
    # not hold the process after the results are out.
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main())
