"""Grades a kernel exercise (``add``, ``reductions``, ``softmax`` ... ``matmul_train``).

For every op that ``ops.exercises()[exercise]`` lists, the learner's function runs through
Triton (interpreted on a CPU, compiled on a GPU) on the registry's ``cpu_shapes`` in every
dtype, each case with fresh random inputs whose seed is printed. One case is three calls:

1. inputs inside NaN-guarded buffers; every ``torch.empty*`` the code makes is a guarded view
   pre-filled with a marked NaN (``kernel_guards``). After the call: no store outside any
   allocation, inputs unchanged, at least one Triton launch; the float64 oracle is computed
   only now (nothing for the code to find), then ``correctness.compare_all`` decides.
2. the same values in new tensors: the result must be right again, bit for bit the same, and
   a different tensor from call 1's.
3. call 1's input tensors refilled with new values: a result cached by pointer or shape is
   stale here.

(Training ops, a forward and a backward each, make calls 2 and 3 in their first dtype only.)

Each op gets one graded check per shape, special checks where an op has a classic trap
(softmax on inputs x100, RMSNorm with a visible eps), and four property checks (a Triton
kernel ran; inputs unchanged; a fresh output each call; deterministic and settled when the call
returns). A failure message reads: the input (op, shape, dtype, seed), expected vs got at the
worst element, then hints from ``kernel_hints``. The exercise is worth what the course manifest
says (:func:`points_for`): 60% for the shape and special checks, 40% for the properties.
"""

from __future__ import annotations

import importlib
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from learning import correctness, ops, runtime
from learning.check import kernel_hints
from learning.check.kernel_guards import (
    AllocationTrap,
    AttributeWatch,
    GuardedInput,
    LaunchCounter,
    place_inputs,
)
from learning.check.model import CheckResult
from learning.check.seeds import SEED_VARIABLE, run_seed

POINTS = 10.0  # an exercise's worth when the course manifest does not say
_CORRECTNESS_SHARE = 0.6  # of an op's points: the shapes and special checks; the rest: properties
_SETTLE_S = 0.02  # how long an output must stay unchanged after the call returned
_REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class _Special:
    """A check beyond the plain shapes: an op's classic trap, on one shape."""

    name: str
    note: str  # appended to the input line
    dtypes: tuple[torch.dtype, ...]
    transform: Callable[[dict], dict]
    shape: tuple[int, ...] | None = None  # None: the op's irregular CPU shape


def _scaled_x(factor: float) -> Callable[[dict], dict]:
    return lambda values: {**values, "x": values["x"] * factor}


_LARGE = _Special("large inputs (x100)", "x scaled by 100", (torch.float32, torch.float16),
                  _scaled_x(100.0))
_EPS = _Special("eps = 0.5 (the argument)", "eps = 0.5", (torch.float32,),
                lambda values: {**values, "eps": 0.5})
# Rows wider than the backward holds whole (16384 values) take its split kernels, which no
# CPU shape reaches: three rows 16400 wide do (lesson 13).
_WIDE_ROWS = _Special("wide rows (3 x 16400)", "rows too wide to hold: the split backward",
                      (torch.float32,), lambda values: values, shape=(3, 16400))
_SPECIALS: dict[str, tuple[_Special, ...]] = {
    # Not softmax_train: on x100 inputs the gradients nearly cancel and no fp32 kernel meets a
    # tolerance relative to their tiny magnitude; the forward's overflow is graded in softmax.
    "softmax": (_LARGE,),
    "rmsnorm": (_EPS,),
    "rmsnorm_train": (_EPS, _WIDE_ROWS),
}
_UNSETTLED = (
    "the output changed after the call returned: work went on in the background (a thread, "
    "an unsynchronised stream). Return only when the result is complete"
)
_BFLOAT16_IN_THE_INTERPRETER = (
    "float16 passed on this shape and bfloat16 did not. Triton's CPU interpreter computes "
    "bfloat16 arithmetic (and tl.dot) wrongly: convert right after loading, "
    "x.to(tl.float32), and compute in float32"
)
_PROPERTIES = {
    "triton": "runs a Triton kernel",
    "inputs": "leaves its inputs unchanged",
    "fresh": "returns a fresh output each call",
    "stable": "is deterministic and done when it returns",
}


def run(exercise: str, impl: str = "exercises") -> list[CheckResult]:
    """Grade ``exercise`` against the implementation package ``impl``."""
    table = ops.exercises()
    if exercise not in table:
        raise ValueError(f"unknown kernel exercise {exercise!r}; choose one of {', '.join(table)}")
    ops.numerics_policy()
    if runtime.default_device() == "cuda":
        torch.cuda.init()  # before the snapshot: initialising CUDA sets module attributes
    watch = AttributeWatch()
    seeds = _Seeds()
    graders = [_SpecGrader(spec, impl, seeds, watch) for spec in table[exercise]]
    results: list[CheckResult] = []
    # Points are handed out in half points, so that every share is exact and they add up.
    op_units = _share(round(2 * points_for(exercise)), len(graders))
    for grader, units in zip(graders, op_units, strict=True):
        checks, properties = grader.grade()
        correctness_units = round(_CORRECTNESS_SHARE * units)
        shares = _share(correctness_units, len(checks))
        shares += _share(units - correctness_units, len(properties))
        for (name, passed, message), share in zip(checks + properties, shares, strict=True):
            results.append(CheckResult(name, passed, share / 2, message))
    tampered = sorted({name for grader in graders for name in grader.tampered})
    not_own = next((g.faults["triton"] for g in graders if "triton" in g.faults), None)
    if not_own and not tampered:
        # A PyTorch fallback or someone else's kernel earns nothing, not just one property.
        verdict = f"not graded: the result did not come from your own Triton kernel.\n{not_own}"
        results = [
            CheckResult(r.name, False, r.max_points, f"{verdict}\n{r.message}".rstrip())
            if not r.passed
            else CheckResult(r.name, False, r.max_points, verdict)
            for r in results
        ]
    if tampered:
        verdict = (
            f"not graded: the implementation modified {', '.join(tampered)} (put back by the "
            "checker). A kernel must leave timers, the checker and the registry alone"
        )
        results = [CheckResult(r.name, False, r.max_points, verdict) for r in results]
    return results


def points_for(exercise: str) -> float:
    """What the course manifest says ``exercise`` is worth (:data:`POINTS` without one)."""
    from learning import manifest

    try:
        return float(manifest.load().exercise(exercise).points)
    except (OSError, manifest.ManifestError):
        return POINTS


# --------------------------------------------------------------------------- one op


_Check = tuple[str, bool, str]  # name, passed, message


@dataclass
class _Call:
    outputs: tuple
    at_return: tuple  # copies of the plain-tensor outputs taken as the call returned
    guarded: list[GuardedInput]
    trap: AllocationTrap
    launches: list[str]


class _Failure(Exception):
    """A case failed; ``message`` is what the learner reads."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class _SpecGrader:
    def __init__(self, spec: ops.OpSpec, impl: str, seeds: _Seeds, watch: AttributeWatch):
        self.spec, self.impl, self.seeds, self.watch = spec, impl, seeds, watch
        self.device = runtime.default_device()
        self.labels = correctness.output_labels(spec)
        self.faults: dict[str, str] = {}  # property -> first message
        self.tampered: list[str] = []
        self.any_case_passed = False
        self.fn: Callable | None = None

    # -- the checks --------------------------------------------------------------------------

    def grade(self) -> tuple[list[_Check], list[_Check]]:
        """(the shape and special checks, the property checks) as (name, passed, message)."""
        spec = self.spec
        cases = [(spec.shape_label(shape), shape, spec.dtypes, None) for shape in spec.cpu_shapes]
        shapes = spec.cpu_shapes
        irregular = next((s for s in shapes if any(d % 16 for d in s)), shapes[-1])
        cases += [(s.name, s.shape or irregular, s.dtypes, s)
                  for s in _SPECIALS.get(spec.name, ())]  # fmt: skip
        checks: list[_Check] = []
        try:
            self.fn = self._import()
        except _Failure as failure:
            for title, *_ in cases:
                checks.append((f"{spec.name} {title}", False, failure.message))
            return checks, self._properties(failure.message)
        not_started: str | None = None
        for title, shape, dtypes, special in cases:
            if self.tampered:  # run() fails every check with what was modified
                checks.append((f"{spec.name} {title}", False, "not run"))
                continue
            if not_started is not None:
                checks.append((f"{spec.name} {title}", False, not_started))
                continue
            passed, message = self._check_shape(shape, dtypes, special)
            checks.append((f"{spec.name} {title}", passed, message))
            if not passed and "not done yet" in message:
                not_started = f"not run: {spec.name} is not done yet (see the first check)"
        return checks, self._properties(not_started)

    def _properties(self, blocked: str | None) -> list[_Check]:
        checks = []
        for key, title in _PROPERTIES.items():
            name = f"{self.spec.name} {title}"
            if blocked is not None or not self.any_case_passed:
                message = blocked or f"not graded until {self.spec.name} passes at least one input"
                checks.append((name, False, message))
            else:
                checks.append((name, key not in self.faults, self.faults.get(key, "")))
        return checks

    def _check_shape(self, shape, dtypes, special: _Special | None) -> tuple[bool, str]:
        worst = 0.0
        for dtype in dtypes:
            # A training case is a forward and a backward through the interpreter: calls 2 and
            # 3 (the properties) run for the first dtype only, to stay well inside the limit.
            repeat = not self.spec.training or dtype == dtypes[0]
            try:
                worst = max(worst, self._case(shape, dtype, special, repeat))
            except _Failure as failure:
                passed_in_half = torch.float16 in dtypes[: dtypes.index(dtype)]
                if dtype == torch.bfloat16 and passed_in_half and runtime.interpreting():
                    return False, f"{failure.message}\nhint: {_BFLOAT16_IN_THE_INTERPRETER}"
                return False, failure.message
            self.any_case_passed = True
        names = ", ".join(ops.dtype_name(d) for d in dtypes)
        return True, f"{names}: worst error {worst:.2f} of the tolerance"

    # -- one case: three calls ---------------------------------------------------------------

    def _case(self, shape, dtype, special: _Special | None, repeat: bool = True) -> float:
        spec = self.spec
        transform = special.transform if special else (lambda values: values)
        note = f", {special.note}" if special else ""
        seed = self.seeds.next()
        values = self._values(shape, dtype, seed, transform)
        describe = f"input: {spec.name} {spec.shape_label(shape)} {ops.dtype_name(dtype)}, "
        replay = f"; {SEED_VARIABLE}={self.seeds.start} replays the run"
        context = f"{describe}seed {seed}{note}{replay}"

        inputs, guarded = place_inputs(values, spec.wrt)
        first = self._call(inputs, guarded, context)
        self._check_memory(first, context)
        expected = spec.expected(values)  # only now: nothing for the code to find earlier
        verdicts = self._compare(first.at_return, expected, dtype)
        settled = self._settled(first, context)
        if not all(v.passed for v in verdicts):
            del expected  # the reruns below are the code's calls too
            if not settled:  # what it returned is not what it computed: nothing else to say
                raise _Failure(_message(context, verdicts, [_UNSETTLED]))
            hints = self._reads_past_the_end(values, first.at_return)
            hints += kernel_hints.explain(
                spec, values, first.at_return, spec.expected(values), verdicts, dtype=dtype,
                scale=100.0 if special is _LARGE else 1.0, start_here=self._start_here(),
            )
            raise _Failure(_message(context, verdicts, hints))
        worst = max(v.tolerance_used or 0.0 for v in verdicts)
        del expected
        if not repeat:
            return worst

        again_inputs, again_guarded = place_inputs(values, spec.wrt)
        again = self._call(again_inputs, again_guarded, f"{context} (call 2, same values)")
        self._check_memory(again, context)
        verdicts = self._compare(again.at_return, spec.expected(values), dtype)
        if not all(v.passed for v in verdicts):
            raise _Failure(_message(
                f"{context} (call 2: the same values as call 1, in new tensors)", verdicts,
                ["call 1 with these values was right and call 2 was not: the result must not "
                 "depend on earlier calls (warm-up, a counter, state kept between calls)"],
            ))
        self._check_same_bits(first.at_return, again.at_return, context)
        self._check_fresh(first.outputs, again.outputs, "call 1", context)

        seed_b = self.seeds.next()
        values_b = self._values(shape, dtype, seed_b, transform)
        with torch.no_grad():
            for item in guarded:
                item.view.copy_(values_b[item.name])
                item.refresh_snapshot()
        inputs = {**inputs, **{k: v for k, v in values_b.items() if not torch.is_tensor(v)}}
        context_b = f"{describe}seed {seed_b}{note}{replay} (call 3: call 1's tensors, new values)"
        third = self._call(inputs, guarded, context_b)
        self._check_memory(third, context_b)
        verdicts = self._compare(third.at_return, spec.expected(values_b), dtype)
        if not all(v.passed for v in verdicts):
            stale = _same_bits_all(first.at_return, third.at_return)
            raise _Failure(_message(context_b, verdicts, [
                "call 3 passed call 1's input tensors refilled with new values, and "
                + ("got call 1's result back: the output was cached by pointer or shape"
                   if stale else "the result was wrong: nothing may be cached between calls"),
            ]))
        self._check_fresh(first.outputs, third.outputs, "call 1", context_b)
        self._check_fresh(again.outputs, third.outputs, "call 2", context_b)
        return max(worst, *(v.tolerance_used or 0.0 for v in verdicts))

    def _values(self, shape, dtype, seed, transform) -> dict:
        made = self.spec.inputs(shape, dtype, seed, self.device)
        values = {k: v.detach() if torch.is_tensor(v) else v for k, v in made.items()}
        return transform(values)

    def _call(self, inputs: dict, guarded: list[GuardedInput], context: str) -> _Call:
        trap, launches = AllocationTrap(), LaunchCounter()
        outputs, error = None, None
        try:
            with trap, launches:
                outputs = tuple(self.spec.call(self.fn, inputs))
                if self.device == "cuda":
                    torch.cuda.synchronize()
                at_return = _snapshot(outputs)  # what is graded: the output as it returned
        except (Exception, SystemExit) as exc:  # the learner's code: reported, not raised
            error = exc
        finally:
            self.tampered += trap.tampered + self.watch.check_and_restore()
        if error is not None:
            raise _Failure(self._explain_error(error, context))
        if not launches.kernels:
            self.faults.setdefault(
                "triton",
                f"{context}\nno Triton kernel ran: the result came from PyTorch. "
                "Launch your @triton.jit kernel (kernel[grid](...)) and return what it stored",
            )
        elif not any(module.startswith(f"{self.impl}.") for module in launches.modules):
            borrowed = sorted(set(launches.modules))
            self.faults.setdefault(
                "triton",
                f"{context}\nthe Triton kernels that ran are defined in {', '.join(borrowed)}, "
                f"not in your {self.impl} package: the result came from someone else's kernel. "
                "Launch the @triton.jit kernel written in your own file",
            )
        return _Call(outputs, at_return, guarded, trap, launches.kernels)

    # -- what each call must respect ---------------------------------------------------------

    def _check_memory(self, call: _Call, context: str) -> None:
        names = self._owners(call)
        for buffer in call.trap.buffers:
            before, after = buffer.stray_stores()
            if before or after:
                what = names.get(buffer.storage_ptr, f"a buffer you allocated ({buffer.label})")
                where = (f"{after} elements past the end" if after else
                         f"{before} elements before the start")
                hint = (
                    "mask the stores: tl.store(ptr + offsets, value, mask=offsets < n), and "
                    "for 2-D tiles mask rows and columns" if after else
                    "an offset went below 0: check the base pointer and the offsets' arithmetic"
                )
                raise _Failure(
                    f"{context}\nexpected: every store inside the tensor\n"
                    f"got: an out-of-bounds store, {where} of {what}\nhint: {hint}"
                )
        for item in call.guarded:
            inside, before, after = item.mutated()
            if before or after:
                where = (f"{after} elements past the end" if after else
                         f"{before} elements before the start")
                raise _Failure(
                    f"{context}\nexpected: no store outside the output\n"
                    f"got: an out-of-bounds store {where} of the input {item.name}\n"
                    "hint: check which pointer each tl.store uses, and mask it"
                )
            if inside:
                self.faults.setdefault(
                    "inputs",
                    f"{context}\nthe kernel changed its input {item.name} ({inside} of "
                    f"{item.view.numel()} elements): kernels must not write to their inputs; "
                    "store into a new output tensor",
                )
        input_ptrs = {item.buffer.untyped_storage().data_ptr(): item.name for item in call.guarded}
        for label, output in zip(self.labels, call.outputs, strict=False):
            if type(output) is torch.Tensor and output.untyped_storage().data_ptr() in input_ptrs:
                self.faults.setdefault(
                    "fresh",
                    f"{context}\n{label} is the input "
                    f"{input_ptrs[output.untyped_storage().data_ptr()]} (same memory): "
                    "return a new tensor (torch.empty_like(x)), never an input",
                )

    def _owners(self, call: _Call) -> dict[int, str]:
        names = {}
        for label, output in zip(self.labels, call.outputs or (), strict=False):
            if type(output) is torch.Tensor:
                buffer = call.trap.owner_of(output)
                if buffer is not None:
                    names[buffer.storage_ptr] = f"{label} ({buffer.label})"
        return names

    def _compare(self, outputs, expected, dtype) -> list[correctness.Verdict]:
        return correctness.compare_all(
            outputs, expected, self.spec.tolerances[dtype], dtype=dtype, labels=self.labels
        )

    def _settled(self, call: _Call, context: str) -> bool:
        """Is the output still what it was when the call returned, a moment later?"""
        time.sleep(_SETTLE_S)
        if _same_bits_all(call.at_return, call.outputs):
            return True
        self.faults.setdefault("stable", f"{context}\n{_UNSETTLED}")
        return False

    def _check_same_bits(self, first, second, context: str) -> None:
        if not _same_bits_all(first, second):
            self.faults.setdefault(
                "stable",
                f"{context}\nnon-deterministic: the same inputs gave different bits in call 1 "
                "and call 2: reads uninitialized memory or races (unmasked loads, "
                "programs writing the same element, a missing initialisation)",
            )

    def _check_fresh(self, earlier, later, which: str, context: str) -> None:
        earlier_ptrs = {o.untyped_storage().data_ptr() for o in earlier if type(o) is torch.Tensor}
        for label, output in zip(self.labels, later, strict=False):
            if type(output) is torch.Tensor and output.untyped_storage().data_ptr() in earlier_ptrs:
                self.faults.setdefault(
                    "fresh",
                    f"{context}\n{label} is the same tensor {which} returned: a cached output "
                    "is overwritten by the next call. Allocate a new output on every call",
                )

    def _reads_past_the_end(self, values: dict, at_return) -> list[str]:
        """Run again with one input's guards holding 0 instead of NaN: does the result move?"""
        try:
            baseline = self._call(*place_inputs(values, self.spec.wrt), "")
        except _Failure:
            return []
        if not _same_bits_all(at_return, baseline.at_return):
            return []  # not reproducible as it is: nothing to learn from moving the guards
        for name, value in values.items():
            if not torch.is_tensor(value):
                continue
            inputs, guarded = place_inputs(values, self.spec.wrt)
            item = next(g for g in guarded if g.name == name)
            with torch.no_grad():
                item.buffer[: item.guard].zero_()
                item.buffer[item.guard + item.view.numel():].zero_()
            try:
                rerun = self._call(inputs, guarded, "")
            except _Failure:
                return []
            if not _same_bits_all(at_return, rerun.at_return):
                return [
                    f"your kernel read past the end of the row/tensor {name}: what lies beyond "
                    f"{name} changed the result. Mask the tail: tl.load(ptr + offsets, "
                    "mask=offsets < n_cols, other=...) with the neutral value (0 for a sum, "
                    "-inf for a max)"
                ]
        return []

    # -- import and errors -------------------------------------------------------------------

    def _import(self) -> Callable:
        try:
            return self.spec.kernel_function(self.impl)
        except Exception as exc:
            raise _Failure(
                f"could not import {self.spec.function} from {self.impl}.{self.spec.module}: "
                f"{type(exc).__name__}: {exc}"
            ) from None
        finally:
            self.tampered += self.watch.check_and_restore()

    def _start_here(self) -> str:
        try:
            path = Path(importlib.import_module(f"{self.impl}.{self.spec.module}").__file__)
        except Exception:  # the import already succeeded once; this is only for the message
            return f"{self.impl}.{self.spec.module}"
        shown = path.resolve().relative_to(_REPO) if path.resolve().is_relative_to(_REPO) else path
        return f"{shown} ({self.spec.function} and the kernel it launches)"

    def _explain_error(self, error: BaseException, context: str) -> str:
        where = _learner_frame(error, self.impl)
        text = f"{context}\nraised {type(error).__name__}: {error}{where}"
        if _raised_not_implemented(error):
            return f"{text}\nhint: not done yet: start with the TODOs in {self._start_here()}"
        if "does not require grad" in str(error):
            return (f"{text}\nhint: the forward output is not connected to autograd: wrap the "
                    "kernels in a torch.autograd.Function whose backward launches the backward "
                    "kernel")
        return text


# --------------------------------------------------------------------------- helpers


class _Seeds:
    """Fresh seeds for every case, numbered from the run's start (``seeds.run_seed``):
    ``LEARNING_CHECK_SEED=<start>`` replays a run case for case."""

    def __init__(self) -> None:
        self.start = run_seed(2**31 - 1_000_000)
        self._next = self.start

    def next(self) -> int:
        self._next += 1
        return self._next


def _message(context: str, verdicts, hints: list[str]) -> str:
    """input line, then each failed output with expected vs got at its worst element, hints."""
    lines = [context]
    for verdict in verdicts:
        if verdict.passed:
            continue
        lines.append(verdict.reason)
        if "expected" not in verdict.reason and verdict.expected_value is not None:
            lines[-1] += (
                f"; expected {verdict.expected_value:.6g} at {list(verdict.worst_index)}, "
                f"got {verdict.actual_value:.6g}"
            )
    lines += [f"hint: {hint}" for hint in dict.fromkeys(hints)]
    return "\n".join(lines)


def _snapshot(outputs: tuple) -> tuple:
    """Copies of the plain-tensor outputs; anything else is kept as it is (and fails later)."""
    return tuple(o.detach().clone() if type(o) is torch.Tensor else o for o in outputs)


def _bits(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.detach().contiguous().view(torch.uint8)


def _same_bits_all(first: tuple, second: tuple) -> bool:
    """Bit-for-bit equal plain-tensor outputs (other objects are compared elsewhere)."""
    if len(first) != len(second):
        return False
    for saved, output in zip(first, second, strict=True):
        if type(saved) is not torch.Tensor or type(output) is not torch.Tensor:
            continue
        if saved.shape != output.shape or saved.dtype != output.dtype:
            return False
        if not torch.equal(_bits(saved), _bits(output)):
            return False
    return True


def _raised_not_implemented(error: BaseException) -> bool:
    while error is not None:
        if isinstance(error, NotImplementedError) or "NotImplementedError" in str(error):
            return True
        error = error.__cause__ or error.__context__
    return False


def _learner_frame(error: BaseException, impl: str) -> str:
    """' (at exercises/kernels/softmax.py:42, in softmax)' for the deepest frame in ``impl``."""
    try:
        root = Path(importlib.import_module(impl).__file__).resolve().parent
    except Exception:
        return ""
    frames = [
        f for f in traceback.extract_tb(error.__traceback__)
        if Path(f.filename).resolve().is_relative_to(root)
    ]
    if not frames:
        return ""
    frame = frames[-1]
    path = Path(frame.filename).resolve()
    shown = path.relative_to(_REPO) if path.is_relative_to(_REPO) else path
    return f" (at {shown}:{frame.lineno}, in {frame.name})"


def _share(units: int, count: int) -> list[int]:
    """Split ``units`` over ``count`` checks as evenly as whole units allow."""
    return [units // count + (1 if i < units % count else 0) for i in range(count)]


__all__ = ["POINTS", "SEED_VARIABLE", "points_for", "run"]
