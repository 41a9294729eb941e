"""Checks for lesson 7's exercise, ``<impl>/measurement.py`` (spec: ``reference/measurement.py``).

Each check calls the learner's functions on the lesson's worked examples first, then on fresh
random inputs (new values every run), so a function that returns the worked answer cannot
pass. Byte and FLOP counts are compared with the op registry (``learning.ops``): the registry
stays the one place those formulas live. Every call into the learner's code goes through
:func:`~learning.check.worker.call_with_limit`, so a loop that never ends costs one check,
not the whole run.

A failed check says, in order: the input, what was expected, what came back, and a hint. The
hints know the usual mistakes (a factor of 1000 from milliseconds, an inverted ratio, a
percentage for a fraction, an output counted twice, samples sorted before they are paired ...)
and name the one that fits.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import numbers
import random
import statistics
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from learning.check.model import CheckResult
from learning.check.worker import Outcome, call_with_limit

CALL_LIMIT_S = 2.0  # each call into the learner's code
IMPORT_LIMIT_S = 10.0
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


def _failure(call: str, expected: object, got: object, hint: str) -> Failed:
    return Failed(f"input:    {call}\nexpected: {expected}\ngot:      {got}\nhint:     {hint}")


# --------------------------------------------------------------------------- calling the learner


@dataclass(frozen=True)
class Learner:
    module: ModuleType
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
        fn = getattr(self.module, function, None)
        if not callable(fn):
            names = ", ".join(p for p in PARAMETERS[function])
            raise Failed(
                f"{self.path} has no function `{function}`.\n"
                f"hint:     the lesson asks for `def {function}({names})`; check the spelling, and "
                "that it is defined at the top level of the file, not inside another function."
            )
        outcome = call_with_limit(fn, *args, limit_s=CALL_LIMIT_S, **kwargs)
        if outcome.timed_out:
            raise Failed(
                f"input:    {text}\n"
                f"`{function}` did not return within {CALL_LIMIT_S:g} s, so it was stopped.\n"
                "hint:     a loop that never ends? Each function here is a few lines of "
                "arithmetic; none needs a loop whose condition could stay true."
            )
        if isinstance(outcome.error, NotImplementedError | SystemExit):
            raise Failed(self._error_message(function, text, outcome.error))
        return outcome

    def number(self, function: str, *args, **kwargs) -> float:
        value = self.call(function, *args, **kwargs)
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise _failure(
                call_text(function, args, kwargs),
                "a number",
                f"{value!r} ({type(value).__name__})",
                "return the number itself: not a string, a tuple, or a value printed instead.",
            )
        if not math.isfinite(value):
            raise _failure(
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
        source = getattr(self.module, "__file__", None)
        frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == source]
        if not frames:
            return ""
        frame = frames[-1]
        line = (frame.line or "").strip()
        return f" ({self.path}, line {frame.lineno}, in {frame.name}: `{line}`)"


def call_text(function: str, args: Sequence[object], kwargs: dict) -> str:
    names = [p for p in PARAMETERS.get(function, ()) if p != "*"]
    shown = [f"{name}={value!r}" for name, value in zip(names, args, strict=False)]
    shown += [f"{name}={value!r}" for name, value in kwargs.items()]
    return f"{function}({', '.join(shown)})"


def load(impl: str) -> Learner | str:
    """Import ``<impl>.measurement``; a message instead when it cannot be imported."""
    name = f"{impl}.measurement"
    path = _display_path(impl)
    outcome = call_with_limit(importlib.import_module, name, limit_s=IMPORT_LIMIT_S)
    if outcome.returned:
        module = outcome.value
        return Learner(module, _relative(getattr(module, "__file__", None) or path))
    if outcome.timed_out:
        return (
            f"importing {path} did not finish within {IMPORT_LIMIT_S:g} s.\n"
            "hint:     code at the top level of the file runs when it is imported; is there a "
            "loop there (or a call to one of your functions) that never ends?"
        )
    error = outcome.error
    if isinstance(error, SyntaxError):
        line = (error.text or "").rstrip("\n")
        caret = " " * max((error.offset or 1) - 1 - (len(line) - len(line.lstrip())), 0) + "^"
        return (
            f"{_relative(error.filename or path)} has a syntax error at line {error.lineno}: "
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
    if _close(got, expected):
        return
    hint = default_hint
    if worked is not None and _close(got, worked) and not _close(expected, worked):
        hint = (
            f"{show(got)} is the worked example's answer, but this is a different input: compute "
            "the result from the arguments."
        )
    else:
        for candidate, mistake in mistakes:
            if _close(got, candidate):
                hint = mistake
                break
        else:
            power = _power_of_ten(got, expected)
            if power:
                hint = (
                    f"{show(got)} is {show(expected)} times 10^{power}: a unit conversion is off "
                    "(ms to s is 1e-3; bytes to GB is 1e-9; FLOPs to TFLOPs is 1e-12)."
                )
    raise _failure(call, f"{show(expected)}{unit}", f"{show(got)}{unit}", hint)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)


def _power_of_ten(got: float, expected: float) -> int:
    if got <= 0 or expected <= 0:
        return 0
    power = round(math.log10(got / expected))
    return power if power and _close(got, expected * 10.0**power) else 0


def _unit_mistakes(expected: float, per: str) -> list[tuple[float, str]]:
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
    """The registry's ops whose byte counts lesson 7 teaches: every op but the row reductions
    (lesson 3's), forward or training."""
    from learning import ops

    return [
        spec.name for spec in ops.OPS.values()
        if spec.training == training and not spec.reduces_rows
    ]  # fmt: skip


def registry_flops(op: str, shape: tuple[int, ...]) -> int:
    from learning import ops

    return ops.get(op).flops(shape)


# --------------------------------------------------------------------------- the checks
# In the reference module's order. Each raises Failed on the first input it gets wrong.


def check_speedup(learner: Learner, rng: random.Random) -> None:
    cases = [(10.0, 5.0)] + [(_ms(rng), _ms(rng)) for _ in range(3)]
    for baseline, candidate in cases:
        got = learner.number("speedup", baseline, candidate)
        expected = baseline / candidate
        expect_close(
            got, expected, call=call_text("speedup", (baseline, candidate), {}), unit="x",
            worked=2.0,
            mistakes=[
                (candidate / baseline, "inverted: speedup is baseline / candidate, so a faster "
                 "candidate (a smaller time) gives a number above 1."),
                ((baseline / candidate - 1) * 100, "a percentage: return the ratio (2.0 for "
                 "twice as fast), not how many percent faster."),
                (baseline / candidate * 100, "a percentage: return the ratio itself, not x100."),
                (baseline - candidate, "a difference of times; speedup is their ratio."),
            ],
            default_hint="speedup = baseline_ms / candidate_ms.",
        )


def check_amdahl(learner: Learner, rng: random.Random) -> None:
    cases = [(0.1, 2.0), (0.0, 4.0), (1.0, 4.0)]
    cases += [(round(rng.uniform(0.05, 0.95), 3), round(rng.uniform(1.5, 30), 2)) for _ in range(3)]
    for f, s in cases:
        got = learner.number("amdahl_speedup", f, s)
        expected = 1 / ((1 - f) + f / s)
        mistakes = [
            ((1 - f) + f / s, "that is the new time as a fraction of the old; the speedup is "
             "its reciprocal."),
            (1 / ((1 - f / 100) + f / 100 / s), "fraction is already a fraction (0.1 means "
             "10 %): do not divide it by 100."),
            (1 / ((1 - f) + f * s), "the part that gets faster takes fraction / local_speedup "
             "of the old time, not fraction * local_speedup."),
            (1 / (f + (1 - f) / s), "fraction is the part that gets faster; the other "
             "(1 - fraction) runs as before."),
            ((1 - f) + f * s, "Amdahl adds times, not speedups: new time = (1 - f) + f / s, "
             "speedup = 1 / new time."),
        ]
        if f not in (0.0, 1.0):
            mistakes.append((s, "the local speedup is not the overall one: the untouched "
                             "(1 - fraction) of the time limits what the whole program gains."))
        expect_close(
            got, expected, call=call_text("amdahl_speedup", (f, s), {}), unit="x",
            worked=1 / 0.95, mistakes=mistakes,
            default_hint="overall speedup = 1 / ((1 - fraction) + fraction / local_speedup).",
        )


def check_logical_gbps(learner: Learner, rng: random.Random) -> None:
    cases = [(12_000_000, 2.0)]
    cases += [(rng.randint(10**5, 10**11), _ms(rng)) for _ in range(3)]
    for num_bytes, ms in cases:
        got = learner.number("logical_gbps", num_bytes, ms)
        expected = num_bytes / (ms * 1e6)
        expect_close(
            got, expected, call=call_text("logical_gbps", (num_bytes, ms), {}), unit=" GB/s",
            worked=6.0,
            mistakes=[
                *_unit_mistakes(
                    expected, "GB/s = bytes / (ms * 1e-3 s) / 1e9 = bytes / (ms * 1e6)."
                ),
                (expected * GB / GIB, "that is GiB/s (2^30 bytes); the course, like GPU "
                 "datasheets, reports GB/s (10^9 bytes)."),
                (expected * 8, "that is gigabits per second; bandwidth here is in bytes."),
            ],
            default_hint="GB/s = bytes / (ms * 1e6).",
        )


def check_tflops(learner: Learner, rng: random.Random) -> None:
    worked_flops = 2 * 4096**3
    cases = [(worked_flops, 1.0)] + [(rng.randint(10**6, 10**15), _ms(rng)) for _ in range(3)]
    for flop_count, ms in cases:
        got = learner.number("tflops", flop_count, ms)
        expected = flop_count / (ms * 1e9)
        expect_close(
            got, expected, call=call_text("tflops", (flop_count, ms), {}), unit=" TFLOP/s",
            worked=worked_flops / 1e9,
            mistakes=_unit_mistakes(
                expected, "TFLOP/s = FLOPs / (ms * 1e-3 s) / 1e12 = FLOPs / (ms * 1e9)."
            ),
            default_hint="TFLOP/s = FLOPs / (ms * 1e9).",
        )
    cases = [("matmul", (4096, 4096, 4096))]
    cases += [(op, _shape(rng, op)) for op in ("add", "matmul", "matmul_train")]
    for op, shape in cases:
        got = learner.number("flops", op, shape)
        expected = registry_flops(op, shape)
        product = math.prod(shape)
        expect_close(
            got, expected, call=call_text("flops", (op, shape), {}), unit=" FLOPs",
            worked=2 * 4096**3 if op != "matmul" or shape != (4096, 4096, 4096) else None,
            mistakes={
                "add": [(2 * product, "add does one FLOP per output element.")],
                "matmul": [(product, "a multiply-add is two FLOPs: 2 * M * N * K.")],
                "matmul_train": [
                    (2 * product, "that is the forward GEMM alone; training adds the backward's "
                     "two GEMMs (dA = dC B^T, dB = A^T dC), each as large."),
                    (4 * product, "three GEMMs in all: the forward and the backward's two."),
                    (3 * product, "a multiply-add is two FLOPs: three GEMMs of 2 * M * N * K."),
                ],
            }[op],
            default_hint=f"count {op} as the docstring says; shape is {_convention(op)}.",
            show=_count,
        )


_BYTES_HINTS = {
    "add": "add reads x and y and writes the output: three M x N tensors.",
    "softmax": "softmax reads x once and writes y once: two M x N tensors.",
    "rmsnorm": "residual RMSNorm reads x and the residual, writes y (three M x N tensors), "
    "and reads the weight vector (N values) once.",
    "matmul": "GEMM reads A (M x K) and B (K x N) once and writes C (M x N) once.",
    "softmax_train": "five M x N passes: forward reads x and writes y; backward reads y and "
    "dy and writes dx.",
    "rmsnorm_train": "seven M x N passes (forward: x, residual, y; backward: x and residual "
    "again to recompute h, dy, dx) plus three weight-sized vectors (w forward, w backward, dw).",
    "matmul_train": "three GEMMs (forward C = AB; backward dA = dC B^T and dB = A^T dC), each "
    "moving as much as the forward.",
}


def _byte_mistakes(op: str, shape: tuple[int, ...], e: int) -> list[tuple[float, str]]:
    """What the usual mistakes give for ``op`` at ``shape``, in elements times ``e``."""
    once = "Logical bytes count each tensor once per pass, however often a kernel touches it."
    if op in ("matmul", "matmul_train"):
        m, n, k = shape
        forward = m * k + k * n + m * n
        table = {
            "matmul": [
                (m * k + k * n, "C (M x N) is written: count it too."),
                (forward + m * n, "C is only written, not read: count it once."),
                (2 * m * n * k, f"that is the FLOP count; bytes count each matrix once. {once}"),
            ],
            "matmul_train": [
                (forward, "that is the forward GEMM alone; the backward's two GEMMs move as much "
                 "again each."),
                (2 * forward, "three GEMMs in all: the forward and the backward's dA and dB."),
            ],
        }[op]
    else:
        m, n = shape
        mn = m * n
        table = {
            "add": [
                (2 * mn, "the output is written: count its write too."),
                (4 * mn, "three tensors, each once: was the output counted twice?"),
            ],
            "softmax": [
                (mn, "count the write of y as well as the read of x."),
                (3 * mn, f"x is read once and y written once. {once}"),
                (4 * mn, "y is written once: was it counted twice?"),
            ],
            "rmsnorm": [
                (3 * mn, "the weight vector (N values) is read too, once."),
                (4 * mn, "the weight is read once in all (N values), not once per row."),
                (4 * mn + n, "this RMSNorm writes only y: the sum x + residual is not stored."),
                (2 * mn + n, "the residual is an input too: read x and the residual."),
            ],
            "softmax_train": [
                (2 * mn, "that is the forward alone; the backward reads y and dy and writes dx."),
                (4 * mn, "the backward reads y and dy and writes dx: three passes, plus two."),
                (6 * mn, f"five passes: the backward needs y, not x. {once}"),
            ],
            "rmsnorm_train": [
                (3 * mn + n, "that is the forward alone; add the backward's passes."),
                (7 * mn, "add the three weight-sized vectors: w forward, w backward, dw."),
                (7 * mn + n, "three weight-sized vectors: w read forward, w read backward, dw "
                 "written."),
                (7 * mn + 2 * n, "three weight-sized vectors: dw is written too."),
                (10 * mn, "dw is one vector of N values, not one per row."),
            ],
        }[op]
    return [(elements * e, hint) for elements, hint in table]


def _check_bytes(learner: Learner, op: str, shape: tuple[int, ...], e: int, worked=None) -> None:
    got = learner.number("logical_bytes", op, shape, e)
    expected = registry_bytes(op, shape, e)
    mistakes = [(expected / e, "that counts elements, not bytes: multiply by element_size.")]
    expect_close(
        got, expected, call=call_text("logical_bytes", (op, shape, e), {}), unit=" bytes",
        worked=worked, mistakes=mistakes + _byte_mistakes(op, shape, e),
        default_hint=f"{_BYTES_HINTS[op]} Shape is {_convention(op)}; multiply elements by "
        "element_size.",
        show=_count,
    )


def check_logical_bytes(learner: Learner, rng: random.Random) -> None:
    worked_add = 3 * 1024 * 1024 * 4
    _check_bytes(learner, "add", (1024, 1024), 4)
    _check_bytes(learner, "softmax", (4096, 4096), 4)
    for op in taught_ops(training=False):
        for e in (2, 4):
            _check_bytes(learner, op, _shape(rng, op), e, worked=worked_add)


def check_training_bytes(learner: Learner, rng: random.Random) -> None:
    for op in taught_ops(training=True):
        for e in (2, 4):
            _check_bytes(learner, op, _shape(rng, op), e)


def check_fits_in_l2(learner: Learner, rng: random.Random) -> None:
    cases = [
        ("softmax", (1024, 1024), 4, L2_EXAMPLE_BYTES),  # 8 MiB: fits
        ("softmax", (16384, 4096), 2, L2_EXAMPLE_BYTES),  # 256 MiB: does not
    ]
    for op in taught_ops(training=False):
        shape, e = _shape(rng, op), rng.choice((2, 4))
        footprint = registry_bytes(op, shape, e)
        larger = footprint + rng.randint(1, footprint)
        cases += [(op, shape, e, l2) for l2 in (footprint, footprint - 1, larger, footprint // 3)]
    rng.shuffle(cases[2:])
    for op, shape, e, l2 in cases:
        got = learner.call("fits_in_l2", op, shape, e, l2)
        footprint = registry_bytes(op, shape, e)
        expected = footprint <= l2
        call = call_text("fits_in_l2", (op, shape, e, l2), {})
        if type(got).__name__ not in ("bool", "bool_"):
            shown = f"{got!r} ({type(got).__name__})"
            raise _failure(call, expected, shown, "return True or False.")
        if bool(got) == expected:
            continue
        if footprint == l2:
            hint = "the inputs and output take exactly l2_bytes: that fits (compare with <=)."
        else:
            hint = (
                f"the inputs and output of {op} {shape} take {footprint:,} bytes together "
                f"({_BYTES_HINTS[op]}), against an L2 of {l2:,} bytes."
            )
        raise _failure(call, expected, got, hint)


def check_summarize(learner: Learner, rng: random.Random) -> None:
    cases = [[1.0, 3.0, 2.0]]
    for count in (rng.randrange(5, 16, 2), rng.randrange(4, 15, 2)):
        samples = [round(rng.uniform(0.1, 5.0), 4) for _ in range(count)]
        samples[rng.randrange(count)] *= 10  # one slow outlier, as a real run often has
        cases.append(samples)
    for samples in cases:
        given = list(samples)
        got = learner.call("summarize", given)
        call = call_text("summarize", (samples,), {})
        ordered = sorted(samples)
        middle = len(ordered) // 2
        if len(ordered) % 2:
            median = ordered[middle]
        else:
            median = (ordered[middle - 1] + ordered[middle]) / 2
        expected = (median, ordered[0], ordered[-1])
        if given != samples:
            raise _failure(call, "the caller's list left as it was", f"it became {given}",
                           "sort a copy (sorted(samples_ms)): the samples' order records when "
                           "each was taken, which is how drift and warm-up are seen.")
        try:
            values = tuple(float(v) for v in got)
        except TypeError:
            values = ()
        if len(values) != 3:
            raise _failure(call, f"Spread(median_ms, min_ms, max_ms) = {expected}", repr(got),
                           "return Spread(median_ms=..., min_ms=..., max_ms=...).")
        if all(_close(a, b) for a, b in zip(values, expected, strict=True)):
            continue
        hint = "median: the middle sample once sorted; min and max: the first and last."
        if _close(values[0], sum(samples) / len(samples)):
            hint = ("that median is the mean: one slow outlier pulls the mean, while the median "
                    "is the middle sample once sorted.")
        elif _close(values[0], samples[len(samples) // 2]):
            hint = "sort first: the middle sample in the order taken is not the median."
        elif len(samples) % 2 == 0 and values[0] in (ordered[middle - 1], ordered[middle]):
            hint = "with an even count the median is the mean of the two middle samples."
        elif _close(values[1], expected[2]) and _close(values[2], expected[1]):
            hint = "min and max are swapped: the order is (median_ms, min_ms, max_ms)."
        raise _failure(call, f"Spread{expected}", f"{got!r}", hint)


# The docstring's example: ratios 2, 2, 1, 0.8, 2 -> PairedSpeedup(2.0, slower=1, rounds=4).
PAIRED_WORKED = ([2.0, 4.0, 3.0, 1.0, 5.0], [1.0, 2.0, 3.0, 1.25, 2.5])
PAIRED_HINTS = {
    "inverted": "inverted: each round's ratio is baseline / candidate, so a faster candidate "
    "(smaller times) gives a speedup above 1, as speedup() does.",
    "of medians": "that is the ratio of the two medians. Divide round by round first, then take "
    "the median of those ratios: a round's two samples share its clocks, and only their ratio "
    "cancels that round's drift.",
    "sorted": "the pairs were broken: sample i of each list was taken in round i, under the same "
    "clocks, and sorting the samples before dividing pairs the fastest with the fastest instead. "
    "Divide in round order (zip); sort only the ratios, to find their median.",
    "mean": "that is the mean of the round-by-round ratios; take their median, so that one "
    "disturbed round does not pull it.",
    "ties left out": "a tie is a ratio of exactly 1 and stays in the median; ties are left out of "
    "slower and rounds only.",
    "even": "with an even number of rounds the median is the mean of the two middle ratios "
    "(summarize computes it).",
    "reordered": "leave the caller's lists as they were: their order is the rounds' order, which "
    "pairs sample i of one list with sample i of the other. Sort a copy of the ratios, never "
    "the samples.",
    "ties as losses": "a tie (two equal samples) is not a loss: slower counts the rounds in which "
    "the candidate took longer (candidate > baseline), strictly.",
    "won": "that counts the rounds the candidate won; slower counts those it lost "
    "(candidate > baseline).",
    "ties in rounds": "a tie says nothing about which variant is faster: rounds counts the "
    "rounds that were not ties.",
}


def _paired_expected(baseline: list[float], candidate: list[float]) -> tuple[float, int, int]:
    """(speedup, slower, rounds) as the engine's paired ratio counts them (the one definition)."""
    from learning.report.stats import paired

    result = paired({"samples_ms": candidate}, {"samples_ms": baseline})
    return result["paired_ratio"], result["slower"], result["rounds"]


def _paired_mistakes(baseline: list[float], candidate: list[float]) -> list[tuple[float, str]]:
    """The speedup each usual mistake gives on these samples, with the hint that names it."""
    ratios = [b / c for b, c in zip(baseline, candidate, strict=True)]
    untied = [b / c for b, c in zip(baseline, candidate, strict=True) if b != c]
    resorted = zip(sorted(baseline), sorted(candidate), strict=True)
    mistakes = [
        (statistics.median(c / b for b, c in zip(baseline, candidate, strict=True)), "inverted"),
        (statistics.median(baseline) / statistics.median(candidate), "of medians"),
        (statistics.median(b / c for b, c in resorted), "sorted"),
        (sum(ratios) / len(ratios), "mean"),
    ]
    if untied and len(untied) < len(ratios):
        mistakes.append((statistics.median(untied), "ties left out"))
    if len(ratios) % 2 == 0:
        ordered = sorted(ratios)
        mistakes += [(ordered[len(ordered) // 2], "even"), (ordered[len(ordered) // 2 - 1], "even")]
    return [(value, PAIRED_HINTS[name]) for value, name in mistakes]


def paired_samples(rng: random.Random, count: int) -> tuple[list[float], list[float]]:
    """Two variants' samples for ``count`` rounds, in round order, with a drift that each round's
    two samples share.

    Each round runs in one of two clock states 13% apart (as the H200's do), plus up to 10% of
    slower drift; the candidate is a few percent faster or slower than the baseline, each
    sample has 3% of noise of its own, one round is disturbed for the candidate alone, and one
    or two rounds tie. Drawn again until the ratio of the medians misses the paired speedup by
    more than 1% and each usual mistake gives an answer of its own, so that the hints tell them
    apart.
    """
    for _ in range(1000):
        base_ms = 10 ** rng.uniform(math.log10(0.02), math.log10(5.0))
        true_speedup = rng.choice((0.96, 0.97, 0.98, 1.02, 1.03, 1.04))
        baseline, candidate = [], []
        for _ in range(count):
            round_ms = base_ms * rng.choice((1.0, 1.13)) * rng.uniform(1.0, 1.1)
            baseline.append(round(round_ms * rng.uniform(0.97, 1.03), 6))
            candidate.append(round(round_ms / true_speedup * rng.uniform(0.97, 1.03), 6))
        disturbed, *ties = rng.sample(range(count), 1 + rng.randint(1, 2))
        candidate[disturbed] = round(candidate[disturbed] * rng.uniform(1.3, 1.6), 6)
        for tie in ties:
            candidate[tie] = baseline[tie]
        if _telling_apart(baseline, candidate):
            return baseline, candidate
    raise RuntimeError("no paired samples that tell the mistakes apart in 1000 draws")


def _telling_apart(baseline: list[float], candidate: list[float]) -> bool:
    speedup, slower, rounds = _paired_expected(baseline, candidate)
    of_medians = statistics.median(baseline) / statistics.median(candidate)
    values = [speedup] + [value for value, _ in _paired_mistakes(baseline, candidate)]
    apart = all(
        not math.isclose(a, b, rel_tol=1e-4) for i, a in enumerate(values) for b in values[i + 1:]
    )
    return apart and abs(of_medians / speedup - 1) > 0.01 and 2 * slower != rounds


def _paired_values(got: object) -> tuple[float, float, float] | None:
    """(speedup, slower, rounds) from a PairedSpeedup, or any three numbers in that order."""
    if all(hasattr(got, name) for name in ("speedup", "slower", "rounds")):
        values = (got.speedup, got.slower, got.rounds)
    else:
        try:
            values = tuple(got)
        except TypeError:
            return None
    if len(values) != 3:
        return None
    if any(isinstance(v, bool) or not isinstance(v, numbers.Real) for v in values):
        return None
    return tuple(float(v) for v in values)


def _check_paired_case(learner: Learner, baseline: list[float], candidate: list[float]) -> None:
    given_baseline, given_candidate = list(baseline), list(candidate)
    got = learner.call("paired_speedup", given_baseline, given_candidate)
    call = call_text("paired_speedup", (baseline, candidate), {})
    speedup, slower, rounds = _paired_expected(baseline, candidate)
    expected = f"PairedSpeedup(speedup={round(speedup, 6)!r}, slower={slower}, rounds={rounds})"
    if given_baseline != baseline or given_candidate != candidate:
        changed = given_baseline if given_baseline != baseline else given_candidate
        raise _failure(call, "the caller's lists left as they were", f"one became {changed}",
                       PAIRED_HINTS["reordered"])
    values = _paired_values(got)
    if values is None:
        raise _failure(call, expected, repr(got),
                       "return PairedSpeedup(speedup=..., slower=..., rounds=...): a number and "
                       "two counts.")
    got_speedup, got_slower, got_rounds = values
    if _close(got_speedup, speedup) and got_slower == slower and got_rounds == rounds:
        return
    ties = len(baseline) - rounds
    worked = _paired_expected(*PAIRED_WORKED)
    if (baseline, candidate) != PAIRED_WORKED and values == worked:
        hint = ("that is the worked example's answer, but this is a different input: compute the "
                "result from the arguments.")
    elif not _close(got_speedup, speedup):
        hint = "speedup: the median over rounds of baseline[i] / candidate[i]."
        for value, mistake in _paired_mistakes(baseline, candidate):
            if _close(got_speedup, value):
                hint = mistake
                break
    elif got_slower != slower:
        hint = "slower: the rounds in which candidate[i] > baseline[i]."
        if ties and got_slower == slower + ties:
            hint = PAIRED_HINTS["ties as losses"]
        elif got_slower in (rounds - slower, len(baseline) - slower):
            hint = PAIRED_HINTS["won"]
    else:
        hint = "rounds: the rounds whose two samples differ."
        if ties and got_rounds == len(baseline):
            hint = PAIRED_HINTS["ties in rounds"] + f" Here {ties} of {len(baseline)} rounds tie."
    raise _failure(call, expected, repr(got), hint)


def _check_paired_refusal(learner: Learner, baseline: list, candidate: list, hint: str) -> None:
    outcome = learner.attempt("paired_speedup", list(baseline), list(candidate))
    if isinstance(outcome.error, ValueError):
        return
    call = call_text("paired_speedup", (baseline, candidate), {})
    if outcome.error is None:
        got = f"it returned {outcome.value!r}"
    else:
        got = f"{type(outcome.error).__name__}: {outcome.error}"
    raise _failure(call, "ValueError", got, hint)


def check_paired_speedup(learner: Learner, rng: random.Random) -> None:
    counts = (rng.randrange(9, 16, 2), rng.randrange(10, 17, 2), rng.randint(9, 16))
    cases = [PAIRED_WORKED] + [paired_samples(rng, count) for count in counts]
    cases.append(([0.5, 0.7, 0.6], [0.5, 0.7, 0.6]))  # every round a tie: 1.0, 0 of 0 rounds
    for baseline, candidate in cases:
        _check_paired_case(learner, list(baseline), list(candidate))
    baseline, candidate = cases[1]
    unequal = "lists of different lengths cannot be paired round by round: a sample without its "
    unequal += "partner (a run cut short) has no ratio. Compare the lengths and raise ValueError; "
    unequal += "zip(..., strict=True) raises it for you."
    not_positive = ("a sample of 0 ms or less is not a time (a cold sample minus the flush "
                    "median can be), and its ratio means nothing: check every sample before "
                    "dividing, and raise ValueError.")
    refusals = [
        ([1.0, 2.0], [1.0, 2.0, 3.0], unequal),
        (baseline, candidate[:-1], unequal),  # a run cut short
        ([], [], "no rounds, no median: raise ValueError for empty lists rather than return a "
         "number."),
        ([1.0, 2.0, 3.0], [1.0, -0.5, 3.0], not_positive),
        ([1.0, 0.0, 2.0], [1.0, 1.0, 1.0], not_positive),
        ([1.0, 2.0, 3.0], [1.0, 0.0, 3.0], not_positive),
    ]
    for baseline, candidate, hint in refusals:
        _check_paired_refusal(learner, baseline, candidate, hint)


_SENTENCE_VALUES = {
    "gpu": ("NVIDIA H200", "NVIDIA A100-SXM4-80GB", "NVIDIA L4", "NVIDIA GeForce RTX 4090"),
    "variant": ("triton", "triton BLOCK=1024", "the learner's kernel", "torch.compile"),
    "timing_mode": ("CUDA graph replay", "CUDA events", "cold timing with L2 flushed"),
    "baseline": ("torch eager", "the 10-kernel composition", "F.rms_norm"),
    "check": ("the float64 oracle check", "the fp16 tolerance check at every shape"),
    "not_established": ("that it is faster at other shapes", "why it is faster",
                        "that the difference survives a cold L2"),
}


def check_result_sentence(learner: Learner, rng: random.Random) -> None:
    sentences = set()
    for _ in range(2):
        chosen = {key: rng.choice(choices) for key, choices in _SENTENCE_VALUES.items()}
        op = rng.choice(("softmax", "rmsnorm", "add"))
        chosen["case"] = f"{op} {rng.randint(100, 20000)}x{rng.randint(100, 20000)} float16"
        chosen["median_ms"] = round(rng.uniform(0.005, 30.0), rng.randint(2, 6))
        chosen["baseline_median_ms"] = round(rng.uniform(0.005, 30.0), rng.randint(2, 6))
        fields = {key: chosen[key] for key in PARAMETERS["result_sentence"][1:]}  # in order
        got = learner.call("result_sentence", **fields)
        call = call_text("result_sentence", (), fields)
        median = _format_ms(fields["median_ms"])
        baseline_median = _format_ms(fields["baseline_median_ms"])
        expected = (
            f"On {fields['gpu']}, for {fields['case']}, {fields['variant']} took {median} under "
            f"{fields['timing_mode']}, versus {fields['baseline']} at {baseline_median}. "
            f"It passed {fields['check']}. "
            f"The result does not establish {fields['not_established']}."
        )
        if not isinstance(got, str):
            shown = f"{got!r} ({type(got).__name__})"
            raise _failure(call, repr(expected), shown, "return the sentence as a str.")
        if " ".join(got.split()) == expected:
            sentences.add(got)
            continue
        pieces = [
            ("GPU", fields["gpu"]), ("case", fields["case"]), ("variant", fields["variant"]),
            ("median", median), ("timing mode", fields["timing_mode"]),
            ("baseline", fields["baseline"]), ("baseline's median", baseline_median),
            ("check it passed", fields["check"]),
            ("question it does not answer", fields["not_established"]),
        ]
        missing = [(label, text) for label, text in pieces if text not in got]
        if missing and missing[0][0] in ("median", "baseline's median"):
            hint = f"write both medians with format_ms (here {missing[0][1]!r})."
        elif missing:
            hint = f"the sentence lacks the {missing[0][0]} ({missing[0][1]!r})."
        else:
            hint = ("every ingredient is there; compare the wording and punctuation with the "
                    "template in the docstring, word by word.")
        raise _failure(call, repr(expected), repr(got), hint)
    if len(sentences) < 2:
        raise Failed("result_sentence returned the same sentence for different inputs; build it "
                     "from the arguments.")


def _count(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.6g}"


def _format_ms(ms: float) -> str:
    return f"{ms:.4g} ms"


def _ms(rng: random.Random) -> float:
    """A time in ms between 2 microseconds and 50 ms, rounded as a timer would print it."""
    return round(10 ** rng.uniform(math.log10(0.002), math.log10(50)), 6)


def _shape(rng: random.Random, op: str) -> tuple[int, ...]:
    if op in ("matmul", "matmul_train"):
        return tuple(rng.randint(1, 5000) for _ in range(3))
    return (rng.randint(1, 20000), rng.randint(1, 20000))


def _convention(op: str) -> str:
    return "(M, N, K) with A M x K, B K x N" if op.startswith("matmul") else "(M, N)"


CHECKS = (
    Check("speedup", 1, check_speedup),
    Check("amdahl_speedup", 1, check_amdahl),
    Check("logical_gbps", 1, check_logical_gbps),
    Check("tflops and flops", 1, check_tflops),
    Check("logical_bytes (forward ops)", 2, check_logical_bytes),
    Check("logical_bytes (training steps)", 1, check_training_bytes),
    Check("fits_in_l2", 1, check_fits_in_l2),
    Check("summarize", 1, check_summarize),
    Check("paired_speedup", 1, check_paired_speedup),
    Check("result_sentence", 1, check_result_sentence),
)


def run(exercise: str, impl: str) -> list[CheckResult]:
    """The check-module contract: every check of ``exercise`` against ``<impl>/measurement.py``."""
    learner = load(impl)
    rng = random.Random()  # fresh inputs every run
    results = []
    for index, check in enumerate(CHECKS):
        if isinstance(learner, str):
            message = learner if index == 0 else "not checked: the file did not import (see above)."
            results.append(CheckResult(check.name, False, check.points, message))
            continue
        try:
            check.function(learner, rng)
        except Failed as failure:
            results.append(CheckResult(check.name, False, check.points, str(failure)))
        except Exception as error:  # a value the checks did not anticipate
            message = f"the check could not read what came back: {type(error).__name__}: {error}"
            results.append(CheckResult(check.name, False, check.points, message))
        else:
            results.append(CheckResult(check.name, True, check.points))
    return results
