"""What every check of lesson 7's exercise shares: calling the learner's functions, comparing
what came back, the op registry's counts, and the small helpers that draw and print inputs.
"""

from __future__ import annotations

import importlib.util
import math
import numbers
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from learning import ops
from learning.check.remote import (
    CallTimedOut,
    Outcome,
    ProcessDied,
    RemoteModule,
    Session,
    log_lines,
)

CALL_LIMIT_S = 2.0  # each call into the learner's code, in seconds of the reference machine
IMPORT_LIMIT_S = 10.0  # (the session scales both: learning.check.pace)
GB, GIB = 1e9, 2**30
L2_EXAMPLE_BYTES = 60 * 2**20  # an example L2 size (60 MiB) for the worked cases

PARAMETERS = {
    "speedup": ("baseline_ms", "candidate_ms"),
    "amdahl_speedup": ("fraction", "local_speedup"),
    "logical_gbps": ("num_bytes", "ms"),
    "tflops": ("flop_count", "ms"),
    "flops": ("op", "shape"),
    "logical_bytes": ("op", "shape", "element_size"),
    "fits_in_l2": ("op", "shape", "element_size", "l2_bytes"),
    "summarize": ("samples_ms",),
    "paired_speedup": ("baseline_samples_ms", "candidate_samples_ms"),
    "result_sentence": (
        "*", "gpu", "case", "variant", "median_ms", "timing_mode", "baseline",
        "baseline_median_ms", "check", "not_established",
    ),
}


_VALUE_ERROR_HINTS = {
    "summarize": "this input is valid: a list with at least one sample.",
    "paired_speedup": "this input is valid: two lists of one length, every sample positive. "
    "Ties are valid too: a tie is a ratio of 1 and stays in the median.",
}


class Failed(Exception):
    """A check's verdict; ``str(failure)`` is the message the learner reads."""


def failure(call: str, expected: object, got: object, hint: str) -> Failed:
    return Failed(f"input:    {call}\nexpected: {expected}\ngot:      {got}\nhint:     {hint}")


# --------------------------------------------------------------------------- calling the learner


@dataclass(frozen=True)
class Learner:
    """The learner's measurement module, called through the worker (it is never imported here)."""

    module: RemoteModule
    path: str  # as messages show it, e.g. exercises/measurement.py

    def call(self, function: str, *args, **kwargs) -> object:
        """The learner's ``function`` on these arguments, or :class:`Failed` saying what failed."""
        outcome = self.attempt(function, *args, **kwargs)
        if outcome.error is not None:
            text = call_text(function, args, kwargs)
            raise Failed(self._error_message(function, text, outcome.error))
        return outcome.value

    def attempt(self, function: str, *args, **kwargs) -> Outcome:
        """What the learner's ``function`` did on these arguments, an error included (for the
        inputs it must refuse); :class:`Failed` when it is missing, unwritten or never returns."""
        text = call_text(function, args, kwargs)
        try:
            exists, is_callable, _ = self.module.attribute(function, CALL_LIMIT_S)
            outcome = (
                self.module.call(function, args, kwargs, limit_s=CALL_LIMIT_S)
                if exists and is_callable else None
            )  # fmt: skip
        except ProcessDied as died:
            raise Failed(
                f"input:    {text}\nthe check process running `{function}` ended: "
                f"{died.reason}.{log_lines(died.log_tail, 5)}"
            ) from None
        except CallTimedOut:
            outcome = Outcome(timed_out=True)
        if outcome is None:
            names = ", ".join(p for p in PARAMETERS[function])
            raise Failed(
                f"{self.path} has no function `{function}`.\n"
                f"hint:     the lesson asks for `def {function}({names})`; check the spelling, and "
                "that it is defined at the top level of the file, not inside another function."
            )
        if outcome.timed_out:
            raise Failed(
                f"input:    {text}\n"
                f"`{function}` did not return within {self.module.session.scaled(CALL_LIMIT_S):g}"
                " s, so it was stopped.\n"
                "hint:     a loop that never ends? Each function here is a few lines of "
                "arithmetic; none needs a loop whose condition could stay true."
            )
        if isinstance(outcome.error, NotImplementedError | SystemExit):
            raise Failed(self._error_message(function, text, outcome.error))
        return outcome

    def number(self, function: str, *args, **kwargs) -> float:
        value = self.call(function, *args, **kwargs)
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise failure(
                call_text(function, args, kwargs),
                "a number",
                f"{value!r} ({type(value).__name__})",
                "return the number itself: not a string, a tuple, or a value printed instead.",
            )
        if not math.isfinite(value):
            raise failure(
                call_text(function, args, kwargs), "a finite number", repr(value),
                "NaN or infinity comes from 0/0, inf - inf or an overflow: which step made it?",
            )
        return float(value)

    def _error_message(self, function: str, text: str, error: BaseException) -> str:
        kind = type(error).__name__
        if isinstance(error, NotImplementedError):
            todo = str(error).rpartition(f"{function}: ")[2] or "see the docstring"
            return (
                f"`{function}` in {self.path} is not written yet.\n"
                f"hint:     {todo}\n"
                "          Write it in place of the `raise NotImplementedError(...)`."
            )
        if isinstance(error, SystemExit):
            return f"input:    {text}\n`{function}` called sys.exit(); return a value instead."
        where = self._line_of(error)
        hints = {
            "ZeroDivisionError": "which value can be zero here, and should it be on the bottom?",
            "TypeError": "check how many arguments the function takes and in what order: "
            f"({', '.join(PARAMETERS[function])}).",
            "NameError": "a name is used before it is defined, or is misspelled.",
            "ValueError": _VALUE_ERROR_HINTS.get(
                function,
                "this input is valid: the op name is the registry's spelling (add, softmax, "
                "rmsnorm, matmul, softmax_train, rmsnorm_train, matmul_train).",
            ),
        }
        hint = hints.get(kind, "call it yourself on the input above and read the traceback.")
        return f"input:    {text}\n`{function}` raised {kind}: {error}{where}\nhint:     {hint}"

    def _line_of(self, error: BaseException) -> str:
        frame = getattr(error, "learner_frame", None)
        if frame is None:
            return ""
        return f" ({frame.path}, line {frame.line}, in {frame.function}: `{frame.text}`)"


def call_text(function: str, args: Sequence[object], kwargs: dict) -> str:
    names = [p for p in PARAMETERS.get(function, ()) if p != "*"]
    shown = [f"{name}={value!r}" for name, value in zip(names, args, strict=False)]
    shown += [f"{name}={value!r}" for name, value in kwargs.items()]
    return f"{function}({', '.join(shown)})"


def load(impl: str, session: Session) -> Learner | str:
    """Import ``<impl>.measurement`` in the session's worker; a message when it cannot be."""
    name = f"{impl}.measurement"
    path = _display_path(impl)
    module = RemoteModule(session, name)
    outcome = module.load(IMPORT_LIMIT_S)
    if outcome.returned:
        return Learner(module, outcome.value)
    if outcome.timed_out:
        return (
            f"importing {path} did not finish within {session.scaled(IMPORT_LIMIT_S):g} s.\n"
            "hint:     code at the top level of the file runs when it is imported; is there a "
            "loop there (or a call to one of your functions) that never ends?"
        )
    error = outcome.error
    if isinstance(error, SyntaxError):
        line = (error.text or "").rstrip("\n")
        caret = " " * max((error.offset or 1) - 1 - (len(line) - len(line.lstrip())), 0) + "^"
        return (
            f"{error.filename or path} has a syntax error at line {error.lineno}: "
            f"{error.msg}\n    {line.strip()}\n    {caret}\n"
            "hint:     Python runs none of the file until this is fixed. The mistake may sit just "
            "before the line named: an unclosed bracket or quote, a missing colon."
        )
    if isinstance(error, ModuleNotFoundError) and error.name in (impl, name):
        return (
            f"there is no {path}.\n"
            "hint:     make it from the reference with `python scripts/make_exercises.py`."
        )
    return (
        f"importing {path} raised {type(error).__name__}: {error}\n"
        "hint:     code at the top level of the file runs on import; run "
        f"`python -c \"import {name}\"` to see the traceback."
    )


def _display_path(impl: str) -> str:
    try:
        spec = importlib.util.find_spec(impl)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        return _relative(str(Path(list(spec.submodule_search_locations)[0]) / "measurement.py"))
    return f"{impl}/measurement.py"


def _relative(path: str) -> str:
    from learning.manifest import ROOT

    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


# --------------------------------------------------------------------------- comparing


def expect_close(
    got: float,
    expected: float,
    *,
    call: str,
    unit: str = "",
    mistakes: Sequence[tuple[float, str]] = (),
    worked: float | None = None,
    default_hint: str,
    show: Callable[[float], str] = "{:.6g}".format,
) -> None:
    """Pass when ``got`` equals ``expected`` to 1e-6; otherwise name the mistake that fits."""
    if nearly_equal(got, expected):
        return
    hint = default_hint
    if worked is not None and nearly_equal(got, worked) and not nearly_equal(expected, worked):
        hint = (
            f"{show(got)} is the worked example's answer, but this is a different input: compute "
            "the result from the arguments."
        )
    else:
        for candidate, mistake in mistakes:
            if nearly_equal(got, candidate):
                hint = mistake
                break
        else:
            power = power_of_ten(got, expected)
            if power:
                hint = (
                    f"{show(got)} is {show(expected)} times 10^{power}: a unit conversion is off "
                    "(ms to s is 1e-3; bytes to GB is 1e-9; FLOPs to TFLOPs is 1e-12)."
                )
    raise failure(call, f"{show(expected)}{unit}", f"{show(got)}{unit}", hint)


def nearly_equal(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)


def power_of_ten(got: float, expected: float) -> int:
    if got <= 0 or expected <= 0:
        return 0
    power = round(math.log10(got / expected))
    return power if power and nearly_equal(got, expected * 10.0**power) else 0


def unit_mistakes(expected: float, per: str) -> list[tuple[float, str]]:
    return [
        (expected * 1e3, f"1000 times too large: the milliseconds were treated as microseconds, "
         f"or a factor of 1000 was dropped. {per}"),
        (expected / 1e3, f"1000 times too small: the milliseconds were treated as seconds, or a "
         f"factor of 1000 went the wrong way. {per}"),
        (1 / expected, "inverted: a rate is the amount divided by the time, not the reverse."),
    ]


@dataclass(frozen=True)
class Check:
    name: str
    points: float
    function: Callable[[Learner, random.Random], None]


# --------------------------------------------------------------------------- the registry


def registry_bytes(op: str, shape: tuple[int, ...], element_size: int) -> int:
    """Logical bytes as ``learning.ops`` counts them (the one source of truth)."""
    from learning import ops  # imports torch: only when a byte count is checked

    dtype = {2: ops.DTYPES["float16"], 4: ops.DTYPES["float32"]}[element_size]
    return ops.get(op).logical_bytes(shape, dtype)


def taught_ops(training: bool) -> list[str]:
    """The registry's ops whose byte counts lesson 7 teaches: those of the forward group
    (``all``) or the training group, but the row reductions (lesson 3's). Ops of the later
    groups (attention's B x H x N x D, lesson 18) are not lesson 7's."""
    from learning import ops

    group = ops.GROUPS["training" if training else "all"]
    return [name for name in group if not ops.OPS[name].reduces_rows]


def registry_flops(op: str, shape: tuple[int, ...]) -> int:
    from learning import ops

    return ops.get(op).flops(shape)


# ------------------------------------------------------------------------ inputs and their text


def count_text(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.6g}"


def ms_text(ms: float) -> str:
    return f"{ms:.4g} ms"


def random_ms(rng: random.Random) -> float:
    """A time in ms between 2 microseconds and 50 ms, rounded as a timer would print it."""
    return round(10 ** rng.uniform(math.log10(0.002), math.log10(50)), 6)


def random_shape(rng: random.Random, op: str) -> tuple[int, ...]:
    """A shape of the op's rank: up to 5000 a side for a GEMM, 20000 for rows."""
    spec = ops.get(op)
    return tuple(rng.randint(1, 5000 if spec.is_gemm else 20000) for _ in spec.shape_names)


def shape_convention(op: str) -> str:
    return "(M, N, K) with A M x K, B K x N" if ops.get(op).is_gemm else "(M, N)"
