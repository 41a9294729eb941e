"""What every foundations check uses: the guarded learner module, failures that teach, tracing.

A check is a function ``(learner, rng) -> None`` that returns when the learner's code is right
and calls :func:`fail` (input, expected, got, hint) when it is not. :class:`Learner` wraps the
learner's module so that every call into it has a time limit and any exception, or a
NotImplementedError left by the exercise stub, becomes a failure with a message.
"""

from __future__ import annotations

import math
import random
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, NoReturn

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from learning.check.worker import call_with_limit

CALL_LIMIT_S = 5.0  # per call into the learner's code; the whole exercise runs in a few seconds
HALF_DTYPES = (torch.float16, torch.bfloat16)


class Failed(Exception):
    """A check failed; the message is the learner-facing explanation."""


def fail(input: str, expected: Any, got: Any, hint: str) -> NoReturn:
    raise Failed(f"input: {input}\nexpected: {expected}\ngot: {got}\nhint: {hint}")


class Learner:
    """The learner's module, with every call guarded: a time limit, exceptions become failures."""

    def __init__(self, module: ModuleType):
        self.module = module

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.module, name, None)
        if value is None:
            raise Failed(f"{self.module.__name__} has no {name}; restore it from reference/")
        if not callable(value):
            return value
        return lambda *args, **kwargs: self._call(name, value, args, kwargs)

    def _call(self, name: str, function: Callable, args: tuple, kwargs: dict) -> Any:
        outcome = call_with_limit(function, *args, limit_s=CALL_LIMIT_S, **kwargs)
        if outcome.timed_out:
            raise Failed(
                f"{name} did not return within {CALL_LIMIT_S:g} s; look for a loop that never ends"
            )
        if isinstance(outcome.error, NotImplementedError):
            todo = str(outcome.error).split(": ", 1)[-1] if str(outcome.error) else ""
            message = f"not done yet, start at {name}() in {self.module.__name__}"
            raise Failed(message + (f"\nTODO: {todo}" if todo else ""))
        if outcome.error is not None:
            shown = ", ".join([*map(show, args), *(f"{k}={show(v)}" for k, v in kwargs.items())])
            error = outcome.error
            fail(
                f"{name}({shown})",
                "a return value",
                f"{type(error).__name__}: {error}",
                self._where(error)
                + "; call it yourself in the notebook to see the whole traceback",
            )
        return outcome.value

    def _where(self, error: BaseException) -> str:
        """The innermost line of the learner's file in the error's traceback."""
        learner_file = getattr(self.module, "__file__", None)
        frames = [
            f for f in traceback.extract_tb(error.__traceback__) if f.filename == learner_file
        ]
        if not frames:
            return "the error came from a library your code called"
        frame = frames[-1]
        return f"it was raised at line {frame.lineno} of {frame.filename}: `{frame.line}`"


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


class Dispatches(TorchDispatchMode):
    """Records each ATen operator that runs, with the bytes of its tensor inputs and outputs."""

    def __init__(self):
        super().__init__()
        self.calls: list[tuple[str, int]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        tensors = [a for a in [*args, *(kwargs or {}).values()] if isinstance(a, torch.Tensor)]
        outputs = out if isinstance(out, tuple | list) else (out,)
        moved = sum(t.nbytes for t in [*tensors, *outputs] if isinstance(t, torch.Tensor))
        self.calls.append((func.overloadpacket.__name__, moved))
        return out


def random_shape(
    rng: random.Random, dims: int = 2, low: int = 1, high: int = 3000
) -> tuple[int, ...]:
    return tuple(rng.randint(low, high) for _ in range(dims))


@dataclass(frozen=True)
class Check:
    """One graded check: its name (shown to the learner) and the function that runs it."""

    name: str
    function: Callable[[Learner, random.Random], None]
