"""What every foundations check uses: the learner's module through the worker, failures that teach.

A check is a function ``(learner, rng) -> None`` that returns when the learner's code is right
and calls :func:`fail` (input, expected, got, hint) when it is not. :class:`Learner` is the
learner's module as the worker runs it: every call has a time limit and any exception, or a
NotImplementedError left by the exercise stub, becomes a failure with a message.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

import torch

from learning.check.remote import CallTimedOut, Outcome, ProcessDied, RemoteModule

# per call into the learner's code, in seconds of the reference machine (the session scales
# it: learning.check.pace); the whole exercise runs in a few seconds
CALL_LIMIT_S = 5.0
HALF_DTYPES = (torch.float16, torch.bfloat16)


class Failed(Exception):
    """A check failed; the message is the learner-facing explanation."""


def fail(input: str, expected: Any, got: Any, hint: str) -> NoReturn:
    raise Failed(f"input: {input}\nexpected: {expected}\ngot: {got}\nhint: {hint}")


class Learner:
    """The learner's module, called through the worker: a time limit on every call, exceptions
    become failures. The module is never imported here; ``learner.element_size(dtype)`` sends
    the call, and what comes back is data (:mod:`learning.check.protocol`)."""

    def __init__(self, module: RemoteModule):
        self.module = module

    def __getattr__(self, name: str) -> Any:
        try:
            exists, is_callable, value = self.module.attribute(name, CALL_LIMIT_S)
        except ProcessDied as died:
            raise Failed(f"looking up {name} ended the check process: {died.reason}") from None
        except CallTimedOut as stopped:
            raise Failed(f"looking up {name} did not finish within {stopped.limit_s:g} s") from None
        if not exists or (not is_callable and value is None):
            raise Failed(f"{self.module.__name__} has no {name}; restore it from reference/")
        if not is_callable:
            return value
        return lambda *args, **kwargs: self._call(name, args, kwargs).value

    def traced(self, name: str, *args, **kwargs) -> tuple[Any, list[tuple[str, int]]]:
        """``name(*args, **kwargs)`` and the PyTorch operators it ran, as the worker reports
        them: a hint for a message, never a verdict (the learner's process could say anything)."""
        outcome = self._call(name, args, kwargs, report="dispatches")
        report = outcome.report if isinstance(outcome.report, list) else []
        calls = [
            (str(item[0]), int(item[1])) for item in report
            if isinstance(item, list | tuple) and len(item) == 2 and type(item[1]) is int
        ]  # fmt: skip
        return outcome.value, calls

    def _call(self, name: str, args: tuple, kwargs: dict, report: str | None = None) -> Outcome:
        shown = ", ".join([*map(show, args), *(f"{k}={show(v)}" for k, v in kwargs.items())])
        try:
            outcome = self.module.call(name, args, kwargs, limit_s=CALL_LIMIT_S, report=report)
        except ProcessDied as died:
            fail(
                f"{name}({shown})", "a return value", f"the check process ended: {died.reason}",
                "a crash, or os._exit(), in your code; call it yourself in the notebook",
            )
        if outcome.timed_out:
            limit = self.module.session.scaled(CALL_LIMIT_S)
            raise Failed(
                f"{name} did not return within {limit:g} s; look for a loop that never ends"
            )
        error = outcome.error
        if isinstance(error, NotImplementedError):
            todo = str(error).split(": ", 1)[-1] if str(error) else ""
            message = f"not done yet, start at {name}() in {self.module.__name__}"
            raise Failed(message + (f"\nTODO: {todo}" if todo else ""))
        if error is not None:
            fail(
                f"{name}({shown})",
                "a return value",
                f"{type(error).__name__}: {error}",
                _where(error) + "; call it yourself in the notebook to see the whole traceback",
            )
        return outcome


def _where(error: BaseException) -> str:
    """The innermost line of the learner's files in the error's traceback."""
    frame = getattr(error, "learner_frame", None)
    if frame is None:
        return "the error came from a library your code called"
    return f"it was raised at line {frame.line} of {frame.path}: `{frame.text}`"


def show(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"<{str(value.dtype).removeprefix('torch.')} tensor {tuple(value.shape)}>"
    if isinstance(value, torch.dtype):
        return str(value).removeprefix("torch.")
    return repr(value)


def close(got: Any, expected: float, relative: float = 1e-9) -> bool:
    try:
        return math.isclose(float(got), expected, rel_tol=relative, abs_tol=1e-300)
    except (TypeError, ValueError):
        return False


def choice(
    learner: Learner, function: str, choices: Mapping[str, str], answer: str, why: str
) -> None:
    got = getattr(learner, function)()
    if not isinstance(got, str) or got.strip().lower() not in choices:
        fail(
            f"{function}()", f"one of {sorted(choices)}", repr(got), "return the letter as a string"
        )
    if got.strip().lower() != answer:
        fail(f"{function}()", "another choice", f"{got!r}: {choices[got.strip().lower()]}", why)


def random_shape(
    rng: random.Random, dims: int = 2, low: int = 1, high: int = 3000
) -> tuple[int, ...]:
    return tuple(rng.randint(low, high) for _ in range(dims))


@dataclass(frozen=True)
class Check:
    """One graded check: its name (shown to the learner) and the function that runs it.

    ``points`` 0 makes it a report: it passes or fails on what the worker says it saw (how
    the learner's function used PyTorch), which the learner's process could forge, so it
    earns nothing either way."""

    name: str
    function: Callable[[Learner, random.Random], None]
    points: float = 1.0
