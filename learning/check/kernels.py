"""Grades a kernel exercise (``add``, ``reductions``, ``softmax`` ... ``matmul_train``).

The learner's code runs only in the worker process; this module, in the checker's process,
makes every input, computes every expected value and decides every check, from evidence the
worker cannot forge. For each op that ``ops.exercises()[exercise]`` lists, it plans *cases*
(an input shape, dtype and layout): the registry's ``cpu_shapes`` in every dtype, the op's
classic traps (softmax on inputs x100, RMSNorm with a visible eps), and shapes drawn from the
run's seed: more than 64 rows, fp32 rows wider than
4096, widths of 1 and primes, GEMM sizes of every kind, rows whose stride is larger than their
width; for an op of other named dimensions (attention's ``B x H x N x D``), each dimension by
its name (ragged sequences, each head dimension the CPU shapes use, batch and head both past
1). The paths of an op's file that only far larger inputs take by themselves (a row walked in
chunks, the RMSNorm split backward, a weight gradient split-K leaves whole) are taken on small
inputs in every dtype: the checker asks the op module's wrappers for them through their own hook
(``softmax_fwd(x, plan=RowPlan(chunked=True, block_cols=32))``, the plan made by the module's
``RowPlan``), or by shape and layout (transposed GEMM operands); a module without the hook gets
the ordinary call. A path may compare more than the op returns: ``attention_fwd`` is called for
the log-sum-exp the forward saves, compared at fp32's tolerance. What the checker knows of an op
beyond its spec (its paths, its strided inputs, its traps, its typical mistakes) is in the op's
definition package, beside the spec (``learning/ops/softmax/check.py``, read through
``learning.check.op_data``): nothing here is written for one op.

Every call gets fresh tensors inside NaN guards; some repeat an earlier
call's values in new tensors, some pass an earlier call's tensors again, some refill them in
place with new values (with and without a new version number). The calls of all cases and ops
run in one shuffled order, many of them, so a kernel that counts its calls, caches by pointer,
shape or version, or knows the registry's shapes has nothing to hold on to.

For each call the worker returns the outputs, and the trace of the Triton launches it made
(:class:`~learning.check.replay.TraceRecorder`). A call passes only when:

(a) the outputs match the float64 oracle for the inputs it was given
    (``correctness.compare_all``; the oracle is computed here, after the reply);
(b) the trace, replayed in a separate process with only the learner's own ``@triton.jit``
    functions (extracted from their files, never imported) on HIDDEN inputs, new values drawn
    from the run's seed after the call returned, matches the oracle for those inputs;
(c) for a case's first call, the replay on the given inputs is bit for bit what the function
    returned ("your function returns what your kernels stored");
(d) the replays store nothing outside any buffer, leave no output element unwritten and do
    not change the inputs.

A result that passes (a) but fails (b), (c) or (d)'s unwritten outputs did not come from the
learner's kernels: the exercise then earns nothing, with the reason. Failure messages say the
input (op, shape, dtype, seed), expected against got at the worst element, and hints from
``kernel_hints`` (run here, on the returned tensors). What the worker reports about itself (an
output it reused, an output that changed after the call returned, a store past an allocation)
is shown as a hint and in checks of no points, never as evidence.

An op with inputs of large magnitude (softmax's rows shifted by +100, where ``exp`` overflows
unless the row maximum is subtracted) gets a call on them in every case but its traps, at the
case's own shape and path: a kernel that skips the maximum fails on every path that lacks it.

Each op's points (:func:`points_for` splits the manifest's) are shared by its *paths*: the
ordinary path (what the op's own call runs on every small input) and each path a learner writes
apart from it (a chunk loop, a split backward: a ``_Path`` taken through a plan). A path's share
goes in part to its input checks, and the rest to three properties decided by the replays: it
runs its own Triton kernels, leaves its inputs unchanged, and is deterministic. A path earns its
part of the properties only once every input check of it passes, so a kernel that is right on
one easy input (a softmax one column wide is 1.0 whatever the input) collects nothing for
them; a call that hangs or crashes costs its path's whole share. :func:`path_points` gives the
shares (``_ORDINARY_SHARE``, ``_CORRECTNESS_SHARE``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from learning import correctness, ops, runtime
from learning.check import (
    kernel_hints,
    known_answers,
    op_data,
    originality,
    picture,
    protocol,
    traffic,
)
from learning.check.kernel_guards import guard_elements, unwritten_mask
from learning.check.model import CheckResult
from learning.check.remote import (
    REPO,
    CallTimedOut,
    ProcessDied,
    RemoteModule,
    Session,
    derive_seed,
    log_lines,
    python_path,
)
from learning.check.replay.extract import COURSE_PACKAGE, extract_sources, moved_helper
from learning.check.replaying import ReplayService, fresh_outputs, kernel_sources
from learning.check.seeds import SEED_VARIABLE
from learning.check.wrapper_paths import CHUNK, primes
from learning.ops.spec import GEMM, ROWS

RECORDS_KERNELS = True  # the runner starts this exercise's worker ready to record launches
POINTS = 10.0  # an exercise's worth when the course manifest does not say
_UNITS_PER_POINT = 10  # every share is a whole number of tenths of a point
# Of an op's points: its ordinary path's share; the rest is split evenly over the paths a
# learner writes apart from it (the chunk loop, the split backward), all of it when it has none.
_ORDINARY_SHARE = 0.6
# Of a path's points: its input checks; the rest: the properties, which the path earns only
# once every input check of it passes.
_CORRECTNESS_SHARE = 0.6
ORDINARY = "ordinary"  # the path of what the op's own call runs on every small input
_SETTLE_S = 0.02  # how long after the call the worker reads the outputs again
# One call's time limit (and one replay's): a base, plus a second per this many units of work
# (elements; a GEMM's M * N * K / 64; twice for a forward and backward). The interpreter runs
# the reference at about 20 units a millisecond; a first call on a GPU compiles its kernels.
# Seconds of the course's reference machine: each run multiplies them by this machine's pace
# (learning.check.pace, Session.scaled).
_CALL_LIMIT_S = {"cpu": (10.0, 2048), "cuda": (60.0, 1 << 20)}
_IMPORT_LIMIT_S = 60.0
_PROBES_PER_OP = 2  # "reads past the end?" reruns, on failures only
_FILLERS = {False: 26, True: 10}  # extra small calls per op: forward, training
# The same for ops of named dimensions (attention): under the interpreter even a small call
# of theirs costs several of a row op's (three kernels, programs per head), and an exercise
# grades two such ops within its minute.
_NAMED_FILLERS = {False: 12, True: 4}
_MANY_ROWS, _MANY_ELEMENTS = 512, 40_000  # the many-rows case: at most, rows and elements
_LONGEST = 130  # a drawn sequence's length at most: past 128, the largest tile a kernel takes
# A training op's sequences: at least 8. Over two or three keys the softmax's gradient nearly
# cancels, and D_i = rowsum(dO * o) taken from the 16-bit o (as every fused backward takes it)
# misses by more than a tolerance relative to that small gradient: under the interpreter the
# reference used up to 1.09 of the bfloat16 tolerance at N = 2, and at most 0.53 at N = 5 to 11
# (20 inputs each, causal and not).
_SHORTEST_TRAINING = 8
_ROW_WORK = 8  # a row's program, in elements of work (see _work)
_FIRST = 4  # the costliest calls go first, so that their replays overlap the other calls
# --------------------------------------------------------------------------- what is checked
# What the checker knows of an op beyond its spec is in the op's definition package: the
# functions below read it (learning.check.op_data) and make it the types here.


@dataclass(frozen=True)
class _Special:
    """A check beyond the plain shapes: an op's classic trap, on one shape (an op's
    ``SPECIALS``, each a dict of these fields)."""

    name: str
    note: str  # appended to the input line
    dtypes: tuple[torch.dtype, ...]
    transform: Callable[[dict], dict]
    shape: tuple[int, ...] | None = None  # None: the op's irregular CPU shape
    bitwise: bool = True  # (c) too; the wide rows take 6 s a replay in the interpreter


_ONLY_WIDE = ("That path runs by itself only on rows far wider than these (tens of thousands "
              "of values), which is why no other input shows the fault")


@dataclass(frozen=True)
class _Path:
    """A path of an op's wrappers that no small input takes on its own (a row walked in
    chunks, the split backward, a weight gradient too large to split), taken on small inputs.

    ``steps`` call the op module's wrappers in turn (``softmax_fwd(x, plan=...)``), each plan
    made by the module's own plan class from ``plans``: a chunked ``RowPlan`` whose chunk is
    narrower than the drawn rows. A module without that hook gets the ordinary call. Paths
    without steps are reached by their inputs alone (their ``shape``).

    ``outputs`` are the op's outputs, then those named in ``extra``: what a wrapper computes
    that the op's own call does not return (the attention forward's saved log-sum-exp), each
    with the float64 function of the inputs that gives it, the dtype it must have (it is
    compared at that dtype's tolerance) and why, for the hints."""

    name: str  # the check's name
    what: str  # what the input runs, for the input line and the hints
    steps: tuple[dict, ...] = ()
    outputs: tuple[str, ...] = ()
    plans: dict = field(default_factory=dict)
    shape: Callable[[random.Random], tuple[int, ...]] | None = None  # None: a few chunks' rows
    transposed: bool = False  # GEMM operands given as transposed views
    extra: dict[str, tuple[Callable[..., torch.Tensor], torch.dtype, str]] = field(
        default_factory=dict)  # fmt: skip
    alone: str = _ONLY_WIDE  # why no other input shows a fault of this path (the hints)

    @property
    def written(self) -> bool:
        """Whether the path runs kernels a learner writes apart from the ordinary ones: it is
        taken through a plan of the module's own (a chunk loop, a split backward), and carries
        a share of the op's points of its own. A path reached by shape or layout alone
        (transposed operands), or one that compares more of the same call (the saved
        log-sum-exp), is part of the ordinary path."""
        return bool(self.plans)


@dataclass(frozen=True)
class _Large:
    """An op's inputs of large magnitude (its ``LARGE``): the plain inputs made large by
    ``transform`` (softmax's x shifted by +100), described by ``note`` on the input line."""

    note: str
    transform: Callable[[dict], dict]


def _min_width(spec: ops.OpSpec) -> int:
    """The narrowest row the checker draws for the op: its ``MIN_WIDTH``, else 1."""
    return op_data.value(spec.name, "MIN_WIDTH", 1)


def _specials(spec: ops.OpSpec) -> tuple[_Special, ...]:
    return tuple(_Special(**entry) for entry in op_data.value(spec.name, "SPECIALS", ()))


def _paths(spec: ops.OpSpec) -> tuple[_Path, ...]:
    """The paths of the op's wrappers that the CPU shapes miss (every kernel of an exercise's
    file runs in some case)."""
    return tuple(_Path(**entry) for entry in op_data.value(spec.name, "PATHS", ()))


def _strided(spec: ops.OpSpec) -> tuple[str, ...]:
    return tuple(op_data.value(spec.name, "STRIDED", ()))


def _large(spec: ops.OpSpec) -> _Large | None:
    entry = op_data.value(spec.name, "LARGE")
    return _Large(**entry) if entry else None


_PROPERTIES = {
    "own": "runs your own Triton kernels",
    "inputs": "leaves its inputs unchanged",
    "stable": "is deterministic",
}
_REPORTS = {
    "fresh": "returns a fresh output each call (as its process reports; no points)",
    "settled": "is done when it returns (as its process reports; no points)",
}
_NOT_YOURS = (
    "replaying only your kernels' launches on new inputs gave a different result: part of the "
    "result came from PyTorch, from a cache, or from state outside your kernels. Compute the "
    "whole result with your @triton.jit kernels, on every call, from the inputs given"
)
_RIGHT_BY_CHANCE = (
    "right on this input, wrong on new inputs of the same shape and dtype: replaying your "
    "kernels on this input stored exactly what your function returned, so they computed it, "
    "but their result on other values is outside the tolerance. A term that happens to be "
    "small here (a missing sum, a dropped tail) or a race can do this; the other failed checks "
    "of this op, if any, give a hint"
)
_NO_KERNEL = (
    "no Triton kernel ran: the result came from PyTorch. Launch your @triton.jit kernel "
    "(kernel[grid](...)) and return what it stored"
)
_NOT_STORED = (
    "your function returned something other than what your kernels stored: replaying its "
    "launches on these same inputs stored different values. Return the tensor your kernel "
    "wrote, as it is"
)
_COPIED = (
    "reference/ holds the kernel yours is measured against, not an answer to hand in: write "
    "the kernel yourself (the TODOs in your file say what it must do). If you did write this "
    "one yourself, show it to your instructor"
)
_UNSETTLED = (
    "the output changed after the call returned: work went on in the background (a thread, "
    "an unsynchronised stream). Return only when the result is complete"
)
_BFLOAT16_IN_THE_INTERPRETER = (
    "float16 passed on this shape and bfloat16 did not. Triton's CPU interpreter computes "
    "bfloat16 arithmetic (and tl.dot) wrongly: convert right after loading, "
    "x.to(tl.float32), and compute in float32"
)
_HOW = {
    "again": "a repeat call: the same values as an earlier call, in new tensors",
    "same": "a repeat call: an earlier call's tensors again, unchanged",
    "refill": "an earlier call's tensors, refilled in place with new values",
    "refill_quiet": "an earlier call's tensors, refilled in place with new values "
    "(their version counter unchanged)",
}


def points_for(exercise: str) -> float:
    """What the course manifest says ``exercise`` is worth (:data:`POINTS` without one)."""
    from learning import manifest

    try:
        return float(manifest.load().exercise(exercise).points)
    except (OSError, manifest.ManifestError):
        return POINTS


@dataclass(frozen=True)
class PathPoints:
    """What one path of an op is worth: its input checks together, and its part of the three
    properties (earned only once every input check of the path passes)."""

    checks: float
    properties: float

    @property
    def total(self) -> float:
        return self.checks + self.properties


def path_points(exercise: str) -> dict[str, dict[str, PathPoints]]:
    """Each op of ``exercise``, each of its paths (:data:`ORDINARY`, then the names of the paths
    a learner writes apart), and what the path is worth in a whole run."""
    specs = ops.exercises()[exercise]
    units = _share(round(_UNITS_PER_POINT * points_for(exercise)), len(specs))
    table = {}
    for spec, op_units in zip(specs, units, strict=True):
        paths = [ORDINARY, *(path.name for path in _paths(spec) if path.written)]
        table[spec.name] = {
            path: PathPoints(checks / _UNITS_PER_POINT, properties / _UNITS_PER_POINT)
            for path, (checks, properties) in _path_units(op_units, paths).items()
        }  # fmt: skip
    return table


def _path_units(units: int, paths: list[str]) -> dict[str, tuple[int, int]]:
    """An op's ``units`` over the ``paths`` a run grades, each as (input checks, properties):
    the ordinary path :data:`_ORDINARY_SHARE` of them (all where it is alone), the others the
    rest evenly (all of it where a run grades no ordinary input); within a path,
    :data:`_CORRECTNESS_SHARE` to its checks."""
    others = [path for path in paths if path != ORDINARY]
    if ORDINARY not in paths:
        split = _share(units, len(others))
    elif not others:
        split = [units]
    else:
        ordinary = round(_ORDINARY_SHARE * units)
        split = [ordinary, *_share(units - ordinary, len(others))]
    shares = {}
    for path, path_units in zip([ORDINARY] * (ORDINARY in paths) + others, split, strict=True):
        checks = round(_CORRECTNESS_SHARE * path_units)
        shares[path] = (checks, path_units - checks)
    return shares


def run(
    exercise: str, impl: str = "exercises", session: Session | None = None, *,
    focus: Callable[[list[_Case]], list[_Case]] | None = None, reference_copies: bool = False,
) -> list[CheckResult]:
    """Grade ``exercise`` against the implementation package ``impl``, through ``session``'s
    worker (a session of its own when None).

    ``focus`` (for checks that show one guard at work, ``learning.check.harness``) is given
    each op's planned cases and returns the few to run, their calls trimmed as it likes; the
    grading of what runs is unchanged. ``reference_copies`` (the course's tests only) lets
    kernels copied from the reference earn points in a session of its own (see
    :func:`learning.check.runner.check_exercise`)."""
    table = ops.exercises()
    if exercise not in table:
        raise ValueError(f"unknown kernel exercise {exercise!r}; choose one of {', '.join(table)}")
    if session is None:
        with Session(exercise, impl, kernels=True, copies_allowed=reference_copies) as own:
            return run(exercise, impl, own, focus=focus)
    ops.numerics_policy()
    return _Exercise(exercise, impl, session, table[exercise], focus).grade()


# --------------------------------------------------------------------------- the plan


@dataclass(eq=False)
class _Case:
    """One input family of a named check: shape, dtype, layout; its calls run in the plan."""

    spec: ops.OpSpec
    check: str  # the CheckResult it counts towards
    shape: tuple[int, ...]
    dtype: torch.dtype
    index: int  # numbers its seeds
    pads: dict[str, int] = field(default_factory=dict)  # input -> row stride minus width
    special: _Special | None = None
    path: _Path | None = None
    transposed: tuple[str, ...] = ()  # GEMM operands given as transposed views
    calls: list[_Call] = field(default_factory=list)
    failure: str | None = None
    fallback: str | None = None  # why the path's hook was not there: the ordinary call ran
    worst: float = 0.0  # the largest share of the tolerance a passing call used
    traffic: dict | None = None  # the bytes its first call's hidden replay moved (traffic.py)
    stopped: bool = False  # a call did not return, or its process died: its path earns nothing

    def fail(self, message: str) -> None:
        if self.failure is None:
            self.failure = message

    @property
    def share(self) -> str:
        """The path whose share of the op's points the case counts towards (see _Path.written)."""
        return self.path.name if self.path is not None and self.path.written else ORDINARY


@dataclass(eq=False)
class _Call:
    case: _Case
    number: int  # within the case, from 1
    how: str  # first, again, same, refill, refill_quiet, large
    source: _Call | None = None  # the earlier call whose values or tensors it reuses
    after: tuple[_Call, ...] = ()  # calls that must run first
    bitwise: bool = True  # replayed on its own inputs too, and compared bit for bit (c)
    keep: bool = False  # a later call reuses this one's tensors
    release: bool = False  # the last call that reuses its source's tensors
    id: int = 0
    values: dict | None = None
    seed: int = 0
    outputs: tuple | None = None
    generation: int = 0  # which worker process ran it
    ran: bool = False
    hidden: dict | None = None
    hidden_replay: object = None  # Future[Replayed]
    given_replay: object = None
    picture_replay: object = None  # a wrong call replayed on its inputs, to draw (picture.py)
    given_request: tuple | None = None  # what replays it on its own inputs, when asked later
    expected: tuple | None = None


def _width(rng: random.Random, high: int, low: int = 1) -> int:
    """A row width: ``low`` (1: a single column), a prime, a non-power of two or any, up to
    ``high``."""
    kind = rng.randrange(4)
    if kind == 0:
        return low
    if kind == 1:
        return rng.choice(primes(max(low, 2), high))
    value = rng.randint(max(low, 2), high)
    return value + 1 if kind == 2 and value & (value - 1) == 0 else value


def _named_shape(spec: ops.OpSpec, rng: random.Random, *, counts: tuple[int, int] = (1, 2),
                 longest: int = _LONGEST, shortest: int = 1) -> tuple[int, ...]:  # fmt: skip
    """A shape of named dimensions that are neither rows nor a GEMM's (attention's
    B x H x N x D), each drawn by its name: a sequence ``N`` ragged (``shortest``, a prime or
    any, up to ``longest``), a head dimension ``D`` one of those the op's CPU shapes use (the
    kernels are built for a few), any other (batches, heads) a count in ``counts``."""
    shape = []
    for index, name in enumerate(spec.shape_names):
        if name == "N":
            shape.append(_width(rng, longest, shortest))
        elif name == "D":
            shape.append(rng.choice(sorted({cpu[index] for cpu in spec.cpu_shapes})))
        else:
            shape.append(rng.randint(*counts))
    return tuple(shape)


def _plan(spec: ops.OpSpec, rng: random.Random) -> list[_Case]:
    cases: list[_Case] = []
    strided = _strided(spec)
    low = _min_width(spec)

    def case(check: str, shape, dtype, pads=None, special=None, path=None) -> _Case:
        made = _Case(spec, f"{spec.name} {check}", tuple(shape), dtype, len(cases),
                     dict(pads or {}), special, path)  # fmt: skip
        made.calls.append(_Call(made, 1, "first"))
        cases.append(made)
        return made

    def pads() -> dict[str, int]:
        return {name: rng.randint(1, 48) for name in strided}

    for shape in spec.cpu_shapes:
        for dtype in spec.dtypes:
            made = case(spec.shape_label(shape), shape, dtype)
            # A training call's replays cost as much as the call, forward and backward: the
            # bit-for-bit replay (c) runs in the first dtype of each of these shapes.
            made.calls[0].bitwise = not spec.training or dtype == spec.dtypes[0]
    irregular = next((s for s in spec.cpu_shapes if any(d % 16 for d in s)), spec.cpu_shapes[-1])
    for special in _specials(spec):
        for dtype in special.dtypes:
            made = case(special.name, special.shape or irregular, dtype, special=special)
            made.calls[0].bitwise = special.bitwise
    named = spec.shape_names not in (ROWS, GEMM)  # attention's B x H x N x D: _named_shape
    for path in _paths(spec):  # every dtype, rows further apart than their width
        for dtype in spec.dtypes:
            if path.shape:
                shape = path.shape(rng)
            elif named:
                shape = _named_shape(spec, rng)
            else:  # a few chunks' rows
                shape = (rng.randint(2, 6), rng.choice(primes(3 * CHUNK + 1, 400)))
            made = case(path.name, shape, dtype, pads(), path=path)
            if path.transposed:
                made.transposed = rng.choice((("a",), ("b",), ("a", "b")))
    pick = lambda: rng.choice(spec.dtypes)  # noqa: E731
    if spec.is_gemm:
        sizes = lambda high: tuple(rng.randint(1, high) for _ in range(3))  # noqa: E731
        tall = list(sizes(48))
        tall[rng.randrange(3)] = rng.randint(65, 110)
        for shape in (tall, sizes(64), sizes(64)):
            case("drawn sizes", shape, pick())
        case("strided operands", sizes(64), pick(), pads())
        small = lambda: sizes(24 if spec.training else 40)  # noqa: E731
    elif named:
        # A training call costs about four forwards, and the CPU shapes are long already.
        longest = _LONGEST // 2 if spec.training else _LONGEST
        shortest = _SHORTEST_TRAINING if spec.training else 1

        def drawn(**how) -> tuple[int, ...]:
            return _named_shape(spec, rng, shortest=shortest, **{"longest": longest, **how})

        for _ in range(2):
            case("drawn shapes", drawn(), pick())
        # Batch and head both past 1 (neither CPU shape has both): where a head starts is
        # b * stride_b + h * stride_h, and a kernel that mixes the two up shows only here.
        case("batches and heads", drawn(counts=(2, 3), longest=longest // 3), pick())
        case("fewer than 16 in a sequence", drawn(longest=15), pick())
        if strided:
            case("strided rows", drawn(longest=longest // 2), pick(), pads())
        small = lambda: drawn(longest=max(shortest, longest // 4))  # noqa: E731
    else:
        # Many rows, drawn from a range no fixed count covers, at a width where the answer
        # depends on the input (a softmax one column wide is 1.0 whatever the input, so it
        # cannot show whose kernel computed it): the rows past any count a kernel was written
        # for are where a kernel that covers only some of them shows.
        rows = round(math.exp(rng.uniform(math.log(65), math.log(_MANY_ROWS))))
        case(f"many rows (65-{_MANY_ROWS})",
             (rows, _width(rng, max(2, min(300, _MANY_ELEMENTS // rows)), max(low, 2))), pick())
        case("rows past 4096 (float32)", (rng.randint(1, 3), rng.randint(4097, 6000)),
             torch.float32)  # fmt: skip
        case("odd widths", (rng.randint(1, 40), rng.choice(primes(2, 3000))), pick())
        case("odd widths", (rng.randint(1, 40), low), pick())
        if strided:  # two columns or more, as for many rows: a check of its own
            case("strided rows", (rng.randint(1, 40), _width(rng, 1000, max(low, 2))), pick(),
                 pads())  # fmt: skip
        rows = 12 if spec.training else 24
        small = lambda: (rng.randint(1, rows), _width(rng, 700, low))  # noqa: E731
    for _ in range(2):  # repeat calls: the same values again, the same tensors, refills
        base = case("repeated calls", small(), pick(), pads() if strided and rng.random() < 0.5
                    else None)  # fmt: skip
        first = base.calls[0]
        first.keep = True
        again = _Call(base, 2, "again", source=first, after=(first,), keep=True)
        same = _Call(base, 3, "same", source=again, after=(again,))
        refill = _Call(base, 4, "refill", source=first, after=(first,), release=True)
        quiet = _Call(base, 5, "refill_quiet", source=again, after=(same,), release=True)
        base.calls += [again, same, refill, quiet]
    fillers = (_NAMED_FILLERS if named else _FILLERS)[spec.training]
    for _ in range(fillers):  # many calls: a kernel that counts them stops
        filler = case("repeated calls", small(), pick(),
                      pads() if strided and rng.random() < 0.5 else None)  # fmt: skip
        filler.calls[0].bitwise = False
    if _large(spec) is not None:  # at every shape and path but the traps' (large already)
        for made in cases:
            if made.special is None:
                made.calls.append(_Call(made, len(made.calls) + 1, "large", bitwise=False))
    return cases


def _path_request(case: _Case) -> dict:
    """The request's ``path``: the wrappers' calls that take the case's path (none when its
    inputs alone take it)."""
    path = case.path
    if path is None or not path.steps:
        return {}
    return {"path": {"plans": path.plans, "steps": list(path.steps),
                     "outputs": list(path.outputs)}}  # fmt: skip


def _extra(case: _Case) -> dict:
    """The outputs the case's path compares beyond the op's: none where the module had no hook
    for the path and the ordinary call ran."""
    path = case.path
    return dict(path.extra) if path is not None and case.fallback is None else {}


def _expected_of(case: _Case, values: dict) -> tuple:
    """The float64 oracle's outputs for ``values``, then the path's extra outputs."""
    expected = case.spec.expected(values)
    extra = _extra(case)
    if not extra:
        return expected
    as64 = {k: v.detach().double() if torch.is_tensor(v) else v for k, v in values.items()}
    return (*expected, *(oracle(**as64) for oracle, _, _ in extra.values()))


def _schedule(calls: list[_Call], rng: random.Random) -> list[_Call]:
    """The costliest few calls first, then the others shuffled, each after the calls it needs."""
    order = list(calls)
    rng.shuffle(order)
    costly = sorted(order, key=_cost, reverse=True)[:_FIRST]
    order = costly + [call for call in order if call not in costly]
    placed: set[int] = set()
    pending: list[_Call] = []
    scheduled: list[_Call] = []
    for call in order:
        pending.append(call)
        progress = True
        while progress:
            progress = False
            for waiting in list(pending):
                if all(id(need) in placed for need in waiting.after):
                    scheduled.append(waiting)
                    placed.add(id(waiting))
                    pending.remove(waiting)
                    progress = True
    return scheduled + pending


def _work(case: _Case) -> int:
    """Roughly how long the interpreter takes: elements (a GEMM's M * N * K / 64), plus, for a
    row op, a cost per row (a kernel with one program a row pays the interpreter's few
    milliseconds a program), twice for a forward and backward."""
    if case.spec.is_gemm:
        size = case.shape[0] * case.shape[1] * (case.shape[2] // 64 + 1)
    elif case.spec.shape_names == ROWS:
        size = case.shape[0] * case.shape[1] + _ROW_WORK * case.shape[0]
    else:
        size = math.prod(case.shape)
    return size * (2 if case.spec.training else 1)


def _cost(call: _Call) -> int:
    return _work(call.case) if call.how == "first" else 0


# --------------------------------------------------------------------------- inputs


def _placed(value: torch.Tensor, pad: int, fill: float = float("nan"),
            transposed: bool = False) -> torch.Tensor:  # fmt: skip
    """``value`` copied into a new storage: ``fill`` before, after and (with ``pad``) between
    its rows, so an unmasked load past a row or past the tensor reads ``fill``. ``transposed``:
    the transpose of such a tensor of ``value.T``'s shape (its memory column-major)."""
    if transposed:
        return _placed(value.T, pad, fill).T
    value = value.detach()
    if value.dim() >= 2 and pad:  # rows of the last dimension, width + pad apart
        stride = [1, value.shape[-1] + pad]
        for size in reversed(value.shape[1:-1]):
            stride.append(stride[-1] * size)
        stride = tuple(reversed(stride))
        span = sum((size - 1) * step for size, step in zip(value.shape, stride, strict=True)) + 1
        span = span if value.numel() else 0
    else:
        stride = torch.empty(value.shape).stride()
        span = value.numel()
    guard = guard_elements(span)
    storage = torch.full((guard + span + guard,), fill, dtype=value.dtype)
    view = storage.as_strided(value.shape, stride, guard)
    view.copy_(value)
    return view


# --------------------------------------------------------------------------- one exercise


class _Op:
    """One op's state across the run: its cases, faults of its properties, what it reported."""

    def __init__(self, spec: ops.OpSpec, cases: list[_Case]):
        self.spec, self.cases = spec, cases
        self.labels = correctness.output_labels(spec)
        self.import_error: str | None = None
        self.not_started: str | None = None
        self.start_here = ""
        self.faults: dict[str, str] = {}  # property -> first message
        self.faulted: dict[str, set[str | None]] = {}  # property -> its paths (None: every one)
        self.reports: dict[str, str] = {}  # report check -> first message
        self.probes = _PROBES_PER_OP
        self.order_probes = 1  # reruns with programs in order (_order_hint)
        self.precision_probes = 1  # reruns with float32 dots in full precision (_precision_hint)

    def fault(self, key: str, message: str, case: _Case | None = None) -> None:
        """A property's fault, seen on ``case`` (its path loses the property; every path of the
        op when None)."""
        self.faults.setdefault(key, message)
        self.faulted.setdefault(key, set()).add(case.share if case is not None else None)

    def blocked(self, check: str | None = None) -> str | None:
        """Why ``check`` (any check of the op, when None) did not run: the import failed, or
        the op is not done yet (said in full once, on the check whose input showed it)."""
        if self.import_error or not self.not_started:
            return self.import_error
        shown = next((c.check for c in self.cases if c.failure == self.not_started), None)
        if check is not None and check == shown:
            return self.not_started
        where = f" (see {shown})" if shown else ""
        return f"not run: {self.spec.name} is not done yet{where}"


class _Exercise:
    def __init__(self, exercise: str, impl: str, session: Session, specs, focus=None):
        self.exercise, self.impl, self.session = exercise, impl, session
        self.device = runtime.default_device()
        rng = random.Random(derive_seed(session.seed, "plan", exercise))
        planned = [(spec, _plan(spec, rng)) for spec in specs]
        self.ops = [_Op(spec, focus(cases) if focus else cases) for spec, cases in planned]
        self.order = _schedule([c for op in self.ops for case in op.cases for c in case.calls], rng)
        self.limits = _CALL_LIMIT_S.get(self.device, _CALL_LIMIT_S["cuda"])
        self._ids = 0
        self.launched: set[str] = set()  # the kernels the calls' traces launched (copies)
        self.stopped = False  # a result did not come from the learner's kernels: no more calls
        self._service = None  # the replay service while the exercise runs
        self._settled: set[int] = set()
        self.sources: dict[str, str] = {}  # the package's kernel files, read before any call

    # -- the run ----------------------------------------------------------------------------

    def grade(self) -> list[CheckResult]:
        bundle_error = None
        try:
            bundle = self._bundle()
        except Exception as error:  # KernelSourceError, or no package folder to read
            bundle, bundle_error = None, str(error)
        service, self.references = None, {}
        if bundle is not None:
            # Up and loaded before the worker imports any learner code (replaying.py), with
            # the reference functions whose traffic the traffic checks compare with.
            shown = {op.spec.name: traffic.representative(op.cases) for op in self.ops}
            shown = {k: v for k, v in shown.items() if v is not None and self.device == "cpu"}
            service = ReplayService(self.session, bundle, self.device,
                                    self.session.scaled(self.limits[0]),
                                    references=tuple(shown))  # fmt: skip
            service.start()
            self._service = service
            self.references = {name: service.submit_reference(name, self._draw(
                case.calls[0], "reference")) for name, case in shown.items()}  # fmt: skip
        for op in self.ops:
            self._import(op)
        if service is not None:
            try:
                for call in self.order:
                    self._run(call, service)
                    self._settle_done()
                for call in self.order:
                    self._replayed(call)
            finally:
                service.close()
        return self._results(bundle_error)

    def _bundle(self) -> dict:
        # Read once, before the worker runs: the copy check below reads these texts, not the
        # files, which the learner's code could rewrite while it runs.
        self.sources = kernel_sources(self._package_root())
        return extract_sources(self.sources, self.impl).as_dict()

    def _package_root(self) -> Path:
        """Where the worker finds ``impl`` (its sys.path: the course first, then PYTHONPATH),
        found by looking at folders: the learner's package is never imported here."""
        for entry in [REPO, *map(Path, python_path(self.session.extra_path))]:
            if (entry / self.impl / "__init__.py").is_file():
                return entry / self.impl
        raise FileNotFoundError(f"no package folder {self.impl}/ with an __init__.py was found")

    def _import(self, op: _Op) -> None:
        spec = op.spec
        module = RemoteModule(self.session, f"{self.impl}.{spec.module}")
        loaded = module.load(_IMPORT_LIMIT_S)
        where = f"could not import {spec.function} from {self.impl}.{spec.module}"
        limit = self.session.scaled(_IMPORT_LIMIT_S)
        if loaded.timed_out:
            op.import_error = f"{where}: the import did not finish within {limit:g} s"
            return
        if loaded.error is not None:
            op.import_error = f"{where}: {type(loaded.error).__name__}: {loaded.error}"
            moved = moved_helper(str(loaded.error), self.impl)  # a helper the package once held
            op.import_error += f"\n{moved}" if moved else ""
            return
        op.start_here = f"{loaded.value} ({spec.function} and the kernel it launches)"
        try:
            exists, is_callable, _ = module.attribute(spec.function, _IMPORT_LIMIT_S)
        except CallTimedOut:
            op.import_error = f"{where}: looking it up did not finish within {limit:g} s"
            return
        except Exception as error:  # the module's own __getattr__ raised (revived here)
            op.import_error = f"{where}: {type(error).__name__}: {error}"
            return
        if not (exists and is_callable):
            op.import_error = (f"{where}: AttributeError: module {self.impl}.{spec.module} has "
                               f"no function {spec.function!r}")  # fmt: skip

    # -- one call ---------------------------------------------------------------------------

    def _op(self, spec: ops.OpSpec) -> _Op:
        return next(op for op in self.ops if op.spec is spec)

    def _run(self, call: _Call, service: ReplayService) -> None:
        case = call.case
        op = self._op(case.spec)
        if op.import_error or op.not_started or self.stopped or any(
            other.failure for other in op.cases if other.check == case.check
        ):  # fmt: skip
            return  # the check's verdict is known: its other inputs would not change it
        if call.source is not None and (
            not call.source.ran or call.source.generation != self.session.starts
        ):
            return  # its tensors were lost with a worker that was stopped
        self._ids += 1
        call.id = self._ids
        values, placed = self._values(call)
        context = self._context(call)
        request = {
            "kind": "kernel", "op": case.spec.name, "module": f"{self.impl}.{case.spec.module}",
            "function": case.spec.function, "package": self.impl, "call": call.id,
            "keep": call.keep, "settle_s": _SETTLE_S, "device": self.device,
            **_path_request(case),
        }  # fmt: skip
        if placed is not None:
            request["inputs"] = protocol.to_plain(placed, copy=False)
        else:
            refill = {k: v for k, v in values.items() if torch.is_tensor(v)} \
                if call.how.startswith("refill") else {}  # fmt: skip
            request["reuse"] = {"call": call.source.id, "how": call.how, "release": call.release,
                                "values": protocol.to_plain(refill, copy=False)}  # fmt: skip
        reply = self._ask(request, context, case)
        if reply is None:
            return
        call.ran, call.generation = True, self.session.starts
        if case.path is not None and case.path.steps and reply.get("path") != "forced":
            case.fallback = str(reply.get("path"))[:200]  # its report: a hint, no verdict
        if reply.get("ok") is not True:
            case.fail(self._explain_error(op, reply.get("error"), context))
            return
        outputs = self._outputs(reply, context, case)
        if outputs is None:
            return
        call.outputs = outputs
        expected = call.expected = self._expected(call, values)
        verdicts = self._compare(case, outputs, expected)
        observed = reply.get("observed") if type(reply.get("observed")) is dict else {}
        self._note_reports(op, reply, observed, context)
        trace, described = reply.get("trace"), reply.get("described")
        replayable = type(trace) is dict and bool(trace.get("launches"))
        trace = fresh_outputs(trace, described)
        self.launched.update(_launched(trace))  # right or wrong: a copied kernel is named
        if not all(v.passed for v in verdicts):
            case.fail(self._wrong(call, op, values, outputs, expected, verdicts, reply, observed,
                                  context))  # fmt: skip
            if type(trace) is dict and trace.get("launches") == [] and not all(
                _unwritten_all(output) for output in outputs
            ):  # fmt: skip
                # written, and by no kernel: a stale cached answer, or PyTorch's wrong one
                op.fault("own", f"{context}\n{_NO_KERNEL}")
            if replayable and picture.worth_drawing(op.cases, outputs):
                call.picture_replay = service.submit(trace, described, values,
                                                     self._replay_limit(case),
                                                     owners=True)  # fmt: skip
            return
        if call.how == "again" and not _same_bits_all(call.source.outputs, outputs):
            op.fault("stable", f"{context}\nnon-deterministic: the same inputs gave different "
                     "bits in two calls: reads uninitialized memory or races (unmasked loads, "
                     "programs writing the same element, a missing initialisation)",
                     case)  # fmt: skip
        case.worst = max(case.worst, *(v.tolerance_used or 0.0 for v in verdicts))
        if type(trace) is dict and trace.get("launches") == []:
            op.fault("own", f"{context}\n{_NO_KERNEL}")
            return
        side = trace.get("side_streams") if type(trace) is dict else None
        if side:
            names = ", ".join(str(name).split("::")[-1] for name in list(side)[:3])[:200]
            op.fault("stable", f"{context}\n{names} ran on a CUDA stream of its own "
                     "(torch.cuda.stream(...)): the caller's stream does not wait for it, so "
                     "whatever reads the output next can read it before it is written. Launch "
                     "on the current stream", case)  # fmt: skip
        call.hidden = self._draw(call, "hidden")
        limit = self._replay_limit(case)
        call.hidden_replay = service.submit(trace, described, call.hidden, limit)
        call.given_request = (trace, described, values, limit)
        if call.how == "first" and call.bitwise:
            call.given_replay = service.submit(*call.given_request)

    def _limit(self, case: _Case) -> float:
        """One call's limit in seconds of the reference machine (the session scales what it
        asks the worker; :meth:`_replay_limit` is this machine's, for the replay process)."""
        base, per_second = self.limits
        return float(math.ceil(base + _work(case) / per_second))

    def _replay_limit(self, case: _Case) -> float:
        return self.session.scaled(self._limit(case))

    def _ask(self, request: dict, context: str, case: _Case) -> dict | None:
        try:
            return self.session.ask(request, self._limit(case))
        except CallTimedOut as stopped:
            case.stopped = True
            where = (f"\nwhen it was stopped (as its process reported): {stopped.where}"
                     if stopped.where else "")  # fmt: skip
            case.fail(
                f"{context}\ndid not return within {stopped.limit_s:g} s, so the check process "
                f"was stopped (a fresh one runs the other checks){where}\nhint: look for a loop "
                "that never ends: a `while` in a kernel whose condition no program changes, or "
                "a wait that nothing ends"
            )
        except ProcessDied as died:
            case.stopped = True
            case.fail(f"{context}\nthe check process was stopped during this call: "
                      f"{died.reason}{log_lines(died.log_tail, 8)}")  # fmt: skip
        return None

    def _outputs(self, reply: dict, context: str, case: _Case) -> tuple | None:
        try:
            outputs = protocol.revive(reply.get("outputs"))
        except protocol.BadReply as bad:
            case.fail(f"{context}\nthe outputs could not be read: {bad}")
            return None
        if type(outputs) is not tuple:
            case.fail(f"{context}\nthe check process sent no outputs")
            return None
        return outputs

    def _values(self, call: _Call) -> tuple[dict, dict | None]:
        """The call's input values, and the tensors to send (None: reuse an earlier call's)."""
        case = call.case
        if call.how in ("first", "refill", "refill_quiet", "large"):
            call.values = self._draw(call, "given")
        else:
            call.values = call.source.values
        call.seed = call.source.seed if call.how in ("again", "same") else self._seed(call, "given")
        if call.how in ("same", "refill", "refill_quiet"):
            return call.values, None
        placed = {
            k: _placed(v, case.pads.get(k, 0), transposed=k in case.transposed)
            if torch.is_tensor(v) else v for k, v in call.values.items()
        }  # fmt: skip
        return call.values, placed

    def _seed(self, call: _Call, role: str) -> int:
        case = call.case
        return derive_seed(self.session.seed, case.spec.name, case.index, call.number, role)

    def _draw(self, call: _Call, role: str) -> dict:
        case = call.case
        made = case.spec.inputs(case.shape, case.dtype, self._seed(call, role), "cpu")
        values = {k: v.detach() if torch.is_tensor(v) else v for k, v in made.items()}
        if call.how == "large":  # its hidden inputs too
            values = _large(case.spec).transform(values)
        return case.special.transform(values) if case.special else values

    def _expected(self, call: _Call, values: dict) -> tuple:
        if call.how in ("again", "same") and call.source.expected is not None:
            return call.source.expected
        return _expected_of(call.case, values)

    def _compare(self, case: _Case, outputs, expected) -> list[correctness.Verdict]:
        labels, extra = correctness.output_labels(case.spec), _extra(case)
        tolerance = case.spec.tolerances[case.dtype]
        if not extra or len(outputs) != len(expected):
            return correctness.compare_all(outputs, expected, tolerance, dtype=case.dtype,
                                           labels=(*labels, *extra))  # fmt: skip
        own = len(labels)
        verdicts = correctness.compare_all(outputs[:own], expected[:own], tolerance,
                                           dtype=case.dtype, labels=labels)  # fmt: skip
        for (label, (_, dtype, _)), got, want in zip(extra.items(), outputs[own:], expected[own:],
                                                  strict=True):  # fmt: skip
            if type(got) is torch.Tensor and got.dtype != dtype:  # not "the input's dtype"
                verdicts.append(correctness.Verdict(False, f"{label} has dtype "
                                                    f"{ops.dtype_name(got.dtype)}; expected "
                                                    f"{ops.dtype_name(dtype)}"))  # fmt: skip
                continue
            verdicts.append(correctness.compare(got, want, case.spec.tolerances[dtype],
                                                dtype=dtype, label=label))  # fmt: skip
        return verdicts

    def _context(self, call: _Call) -> str:
        case = call.case
        spec = case.spec
        notes = [f", {case.special.note}"] if case.special else []
        if case.path is not None:
            notes.append(f", {case.path.what}")
        if case.transposed:
            notes.append(f", transposed: {', '.join(f'{k} = {k}.T view' for k in case.transposed)}")
        if case.pads:
            strides = ", ".join(
                f"{k}: column stride = height + {p}" if k in case.transposed
                else f"{k}: row stride = width + {p}" for k, p in case.pads.items()
            )  # fmt: skip
            notes.append(f", strided rows ({strides})")
        shape = spec.shape_label(case.shape)
        line = (f"input: {spec.name} {shape} {ops.dtype_name(case.dtype)}, "
                f"seed {call.seed}{''.join(notes)}; "
                f"{SEED_VARIABLE}={self.session.seed} replays the run")  # fmt: skip
        if call.how in _HOW:
            line += f" ({_HOW[call.how]})"
        if call.how == "large":
            line += f" (inputs of large magnitude: {_large(spec).note})"
        return line

    # -- what a failure says ----------------------------------------------------------------

    def _explain_error(self, op: _Op, info, context: str) -> str:
        try:
            error = protocol.revive_error(info)
        except protocol.BadReply as bad:
            return f"{context}\nthe check process's reply was refused: {bad}"
        frame = error.learner_frame
        where = f" (at {frame.path}:{frame.line}, in {frame.function})" if frame else ""
        text = f"{context}\nraised {type(error).__name__}: {error}{where}"
        if error.not_implemented:
            op.not_started = f"{text}\nhint: not done yet: start with the TODOs in {op.start_here}"
            return op.not_started
        if "does not require grad" in str(error):
            return (f"{text}\nhint: the forward output is not connected to autograd: wrap the "
                    "kernels in a torch.autograd.Function whose backward launches the backward "
                    "kernel")  # fmt: skip
        return text

    def _wrong(self, call, op, values, outputs, expected, verdicts, reply, observed, context):
        case, spec = call.case, op.spec
        if reply.get("settled") is False:
            return _message(context, verdicts, [_UNSETTLED])
        hints = []
        if call.how in ("again", "same"):
            hints.append("this call's values were right in an earlier call and wrong now: the "
                         "result must not depend on earlier calls (warm-up, a counter, state "
                         "kept between calls)")  # fmt: skip
        if call.how.startswith("refill"):
            stale = call.source.outputs is not None and _same_bits_all(call.source.outputs,
                                                                       outputs)  # fmt: skip
            hints.append(
                "these tensors were refilled with new values, and " + (
                    "the result is the earlier call's: the output was cached (by pointer, "
                    "shape or version)" if stale else
                    "the result was wrong: nothing may be cached between calls"
                )
            )  # fmt: skip
        for label, before, after in observed.get("stray") or ():
            where = f"{after} elements past the end" if after else f"{before} before the start"
            hints.append(f"the check process saw an out-of-bounds store, {where} of a buffer "
                         f"you allocated ({label}): mask the stores")  # fmt: skip
        forced = case.path is not None and bool(case.path.steps) and case.fallback is None
        if forced:
            hints.append(_path_hint(case.path, reply))
        ordered = self._order_hint(call, op, reply, expected) or self._precision_hint(
            call, op, reply, expected)  # fmt: skip
        if ordered:  # right in order or in full precision: the wrong values say nothing more
            hints += ordered
        else:
            stride = kernel_hints.steps_by_width(spec, outputs, expected, dtype=case.dtype,
                                                 pads=case.pads)  # fmt: skip
            if call.how == "first" and not stride:
                hints += self._reads_past_the_end(call, op, outputs)
            hints += kernel_hints.explain(
                spec, values, outputs, expected, verdicts, dtype=case.dtype,
                start_here=op.start_here, pads=case.pads,
                extra={label: (dtype, why) for label, (_, dtype, why) in _extra(case).items()},
            )  # fmt: skip
        message = _message(context, verdicts, hints)
        if "this exercise is not done yet" in message and not forced:
            op.not_started = message  # (a path's stub leaves the op's other checks to run)
        elif case.dtype == torch.bfloat16 and runtime.interpreting() and self._half_passed(case):
            message += f"\nhint: {_BFLOAT16_IN_THE_INTERPRETER}"
        return message

    def _half_passed(self, case: _Case) -> bool:
        return any(
            other.check == case.check and other.dtype == torch.float16 and other.shape ==
            case.shape and other.failure is None and other.calls[0].ran
            for other in self._op(case.spec).cases
        )  # fmt: skip

    def _reads_past_the_end(self, call: _Call, op: _Op, outputs: tuple) -> list[str]:
        """Rerun with one input's guards holding 0 instead of NaN: does the result move?"""
        if op.probes <= 0 or all(_unwritten_all(o) for o in outputs):
            return []
        op.probes -= 1
        names = [k for k, v in call.values.items() if torch.is_tensor(v)]
        for fills in [{}, *({name: 0.0} for name in names)]:
            rerun = self._rerun(call, fills)
            if rerun is None:
                return []
            if not fills and not _same_bits_all(outputs, rerun):
                return []  # not reproducible as it is: nothing to learn from moving the guards
            if fills and not _same_bits_all(outputs, rerun):
                name = next(iter(fills))
                return [
                    f"your kernel read past the end of the row/tensor {name}: what lies beyond "
                    f"{name} changed the result. Mask the tail: tl.load(ptr + offsets, "
                    "mask=offsets < n_cols, other=...) with the neutral value (0 for a sum, "
                    "-inf for a max)"
                ]
        return []

    def _order_hint(self, call: _Call, op: _Op, reply: dict, expected) -> list[str]:
        """Rerun with each launch's programs in order 0, 1, 2 ...: is the result right then?"""
        trace = reply.get("trace")
        launches = trace.get("launches") if type(trace) is dict else None
        several = [
            str(launch.get("kernel", "?")) for launch in launches or () if type(launch) is dict
            and type(launch.get("grid")) is list and math.prod(launch["grid"]) > 1
        ]  # fmt: skip
        if not several or not runtime.interpreting() or op.order_probes <= 0:
            return []
        op.order_probes -= 1
        rerun = self._rerun(call, {}, in_order=True)
        if rerun is None or not all(v.passed for v in self._compare(call.case, rerun, expected)):
            return []
        names = ", ".join(dict.fromkeys(several))
        return [f"{names} gave the right result when its programs ran one after another "
                "(program 0, then 1, then 2 ...), and a wrong one in the shuffled order the "
                "check runs them in. A GPU runs the programs of a launch at the same time, in "
                "no order you can rely on: a program that reads what another program of the "
                "same launch stores may read it before it is written. Combine the programs' "
                "results in a second launch, or with atomics"]  # fmt: skip

    def _precision_hint(self, call: _Call, op: _Op, reply: dict, expected) -> list[str]:
        """A float32 call rerun with every ``tl.dot`` in full float32: is the result right then?"""
        if call.case.dtype != torch.float32 or not runtime.interpreting() or (
            op.precision_probes <= 0
        ):  # fmt: skip
            return []
        op.precision_probes -= 1
        rerun = self._rerun(call, {}, exact_dots=True)
        if rerun is None or not all(v.passed for v in self._compare(call.case, rerun, expected)):
            return []
        names = ", ".join(_launched(reply.get("trace"))) or "your kernel"
        return [f"{names} multiplied float32 tiles with tl.dot in TF32, Triton's default: "
                "a GPU's tensor cores then keep 10 of each operand's 23 mantissa bits, and the "
                "result misses float32's tolerance (the check multiplies as a GPU does). The "
                "spec asks for float32 products in full precision: tl.dot(a, b, acc, "
                'input_precision="ieee")']  # fmt: skip

    def _rerun(self, call: _Call, fills: dict[str, float], in_order: bool = False,
               exact_dots: bool = False) -> tuple | None:  # fmt: skip
        case = call.case
        placed = {
            k: _placed(v, case.pads.get(k, 0), fills.get(k, float("nan")), k in case.transposed)
            if torch.is_tensor(v) else v for k, v in call.values.items()
        }  # fmt: skip
        self._ids += 1
        request = {
            "kind": "kernel", "op": case.spec.name, "module": f"{self.impl}.{case.spec.module}",
            "function": case.spec.function, "package": self.impl, "call": self._ids,
            "device": self.device, "inputs": protocol.to_plain(placed, copy=False),
            "in_order": in_order, "exact_dots": exact_dots, **_path_request(case),
        }  # fmt: skip
        try:
            reply = self.session.ask(request, self._limit(case))
            outputs = protocol.revive(reply.get("outputs")) if reply.get("ok") is True else None
        except (CallTimedOut, ProcessDied, protocol.BadReply):
            return None  # only a hint was at stake
        return outputs if type(outputs) is tuple else None

    def _note_reports(self, op: _Op, reply: dict, observed: dict, context: str) -> None:
        if reply.get("settled") is False:
            op.reports.setdefault("settled", f"{context}\n{_UNSETTLED}")
        for item in observed.get("outputs_are_inputs") or ():
            if isinstance(item, list) and len(item) == 2:
                label = op.labels[item[0]] if type(item[0]) is int and item[0] < len(
                    op.labels) else "an output"  # fmt: skip
                op.reports.setdefault("fresh", f"{context}\n{label} is the input {item[1]} "
                                      "(same memory): return a new tensor "
                                      "(torch.empty_like(x)), never an input")  # fmt: skip
        if observed.get("reused_outputs"):
            op.reports.setdefault("fresh", f"{context}\nan output is the same tensor an earlier "
                                  "call returned: a cached output is overwritten by the next "
                                  "call. Allocate a new output on every call")  # fmt: skip

    # -- the replays ------------------------------------------------------------------------

    def _settle_done(self) -> None:
        """Judge the replays finished so far; once a result is known not to come from the
        learner's kernels the exercise earns nothing, and the remaining calls are skipped."""
        for call in self.order:
            futures = [f for f in (call.hidden_replay, call.given_replay) if f is not None]
            if id(call) not in self._settled and futures and all(f.done() for f in futures):
                self._replayed(call)
        self.stopped = any("own" in op.faults for op in self.ops)

    def _replayed(self, call: _Call) -> None:
        if call.picture_replay is not None and id(call) not in self._settled:
            self._settled.add(id(call))
            self._draw_picture(call, call.picture_replay.result())
            return
        if call.hidden_replay is None or id(call) in self._settled:
            return
        self._settled.add(id(call))
        case, op = call.case, self._op(call.case.spec)
        context = self._context(call)
        hidden = call.hidden_replay.result()  # TimeUp propagates: the runner reports it
        if hidden.error is not None:
            op.fault("own", f"{context}\n{hidden.error}")
            return
        if hidden.stray_stores:
            case.fail(f"{context}\nexpected: every store inside the tensor\ngot: an "
                      f"out-of-bounds store, {hidden.stray_stores[0]}\nhint: mask the stores: "
                      "tl.store(ptr + offsets, value, mask=offsets < n), and for 2-D tiles mask "
                      "rows and columns")  # fmt: skip
        if hidden.stray_loads:
            case.fail(f"{context}\nexpected: every load inside a tensor\ngot: an "
                      f"out-of-bounds load: {hidden.stray_loads[0]}\nhint: {traffic.LOAD_HINT}")
        if call.how == "first":
            case.traffic = traffic.checked(hidden.traffic)
        if hidden.inputs_changed:
            op.fault("inputs", f"{context}\n{hidden.inputs_changed[0]}: kernels must not write "
                     "to their inputs; store into a new output tensor", case)  # fmt: skip
        expected = _expected_of(case, call.hidden)
        verdicts = self._compare(case, hidden.outputs, expected)
        if hidden.unwritten or not all(v.passed for v in verdicts):
            detail = hidden.unwritten[:1] or [v.reason for v in verdicts if not v.passed][:1]
            if not hidden.unwritten and self._reproduced(call):
                case.fail(f"{context}\n{_RIGHT_BY_CHANCE}\n(on the new inputs: {detail[0]})")
                return
            op.fault("own", f"{context}\n{_NOT_YOURS}\n(on the new inputs: {detail[0]})")
            return
        if call.given_replay is not None:
            given = call.given_replay.result()
            if given.error is None and not _same_bits_all(call.outputs, given.outputs):
                op.fault("own", f"{context}\n{_NOT_STORED}")
                op.fault("stable", f"{context}\n{_NOT_STORED}", case)

    def _reproduced(self, call: _Call) -> bool:
        """Whether replaying only the learner's kernels on the call's own inputs stores what the
        call returned, bit for bit (replayed now when it was not already): then the kernels
        computed that result, and a wrong result on new inputs is the kernels' error, not a
        sign that the result came from elsewhere."""
        given = call.given_replay
        if given is None and call.given_request is not None and self._service is not None:
            given = call.given_replay = self._service.submit(*call.given_request)
        if given is None:
            return False
        replayed = given.result()  # TimeUp propagates: the runner reports it
        return (replayed.error is None and not replayed.unwritten
                and _same_bits_all(call.outputs, replayed.outputs))  # fmt: skip

    def _draw_picture(self, call: _Call, replayed) -> None:
        """The wrong call's picture, its path added to the check's message (picture.py)."""
        case = call.case
        drawn = picture.of_failure(case, call, replayed, self._context(call).split(";")[0])
        if drawn and case.failure is not None:
            case.failure += f"\n{drawn}"

    # -- the verdict ------------------------------------------------------------------------

    def _results(self, bundle_error: str | None) -> list[CheckResult]:
        results: list[CheckResult] = []
        units = _share(round(_UNITS_PER_POINT * points_for(self.exercise)), len(self.ops))
        for op, op_units in zip(self.ops, units, strict=True):
            checks = self._checks(op)
            shares = _path_units(op_units, list(dict.fromkeys(c.path for c in checks)))
            worth = {}
            for path, (check_units, _) in shares.items():
                names = [c.name for c in checks if c.path == path]
                worth.update(zip(names, _share(check_units, len(names)), strict=True))
            for check in checks:
                results.append(CheckResult(check.name, check.passed,
                                           worth[check.name] / _UNITS_PER_POINT,
                                           check.message))  # fmt: skip
            results += self._properties(op, bundle_error, checks, shares)
            blocked = op.blocked()
            for key, title in _REPORTS.items():
                message = blocked or op.reports.get(key, "")
                results.append(CheckResult(f"{op.spec.name} {title}", not message, 0.0, message))
            results.append(traffic.check(op.spec, op.cases, traffic.checked(
                self._reference_traffic(op)), op.labels, blocked))
        verdict = self._not_yours(bundle_error)
        if verdict:
            results = [
                CheckResult(r.name, False, r.max_points, f"{verdict}\n{r.message}".rstrip()
                            if not r.passed else verdict) if r.max_points else r
                for r in results
            ]  # fmt: skip
        return results

    def _reference_traffic(self, op: _Op) -> dict | None:
        """The reference's traffic for the op's message, or None: a replay still waiting when
        the service closed was cancelled (no call of the op was replayed, as when it is not
        done yet, so nothing waited for it), and only a comparison in a message is lost."""
        reference = self.references.get(op.spec.name)
        if reference is None or reference.cancelled():
            return None
        return reference.result()

    def _not_yours(self, bundle_error: str | None) -> str | None:
        if bundle_error:
            return ("not graded: your kernels cannot be replayed, so nothing shows that they "
                    f"computed the results.\n{bundle_error}")  # fmt: skip
        own = next((op.faults["own"] for op in self.ops if "own" in op.faults), None)
        if own:
            return f"not graded: the result did not come from your own Triton kernels.\n{own}"
        copied = self._copied()
        if copied:
            return ("not graded: the kernels that computed the results are the course's "
                    "reference kernels, copied:\n" + "\n".join(map(str, copied)) + "\n"
                    f"{_COPIED}")  # fmt: skip
        return None

    def _copied(self) -> list[originality.Copy | known_answers.Match]:
        """The launched kernels (and the jit functions they call) that are reference solution
        kernels, copied (learning.check.originality), or that hold most of a known answer of
        any version (learning.check.known_answers); none for the reference itself."""
        if self.impl == COURSE_PACKAGE or self.session.copies_allowed:
            return []
        sources = {f"{self.impl}/{path}": text for path, text in self.sources.items()}
        launched = [f"{self.impl}/{name}" for name in self.launched]
        exact = originality.copies(sources, originality.solutions(), only=launched)
        found = {(copy.path, copy.name) for copy in exact}
        reached = originality.reached(sources, launched)
        near = [match for match in known_answers.matches(sources, only=reached)
                if (match.path, match.name) not in found]  # fmt: skip
        return [*exact, *near]

    def _checks(self, op: _Op) -> list[_Checked]:
        checks = []
        paths = list(dict.fromkeys(case.share for case in op.cases))
        stopped = {}  # path -> the first check whose call did not return or crashed
        for case in op.cases:
            if case.stopped:
                stopped.setdefault(case.share, case.check)
        for name in dict.fromkeys(case.check for case in op.cases):
            cases = [case for case in op.cases if case.check == name]
            path = cases[0].share
            failure = next((c.failure for c in cases if c.failure), None)
            ran = [c for c in cases if c.calls[0].ran]
            hung = _HUNG.format(path=_path_words(op.spec, path, paths))
            if op.blocked(name):
                checks.append(_Checked(name, False, op.blocked(name), path))
            elif failure:
                note = f"\n{hung}" if any(c.stopped for c in cases) else ""
                checks.append(_Checked(name, False, failure + note, path))
            elif not ran:
                checks.append(_Checked(name, False, "not run", path))
            elif path in stopped:
                checks.append(_Checked(name, False, f"right on every input of this check, but "
                                       f"a call of {stopped[path]} did not return (see there). "
                                       f"{hung}", path))  # fmt: skip
            else:
                dtypes = ", ".join(dict.fromkeys(ops.dtype_name(c.dtype) for c in ran))
                worst = max(c.worst for c in ran)
                message = f"{dtypes}: worst error {worst:.2f} of the tolerance"
                fallback = next((c.fallback for c in ran if c.fallback), None)
                if fallback:
                    message += (f"; the ordinary call ran instead of {cases[0].path.what} "
                                f"({fallback})")  # fmt: skip
                checks.append(_Checked(name, True, message, path))
        return checks

    def _properties(self, op: _Op, bundle_error: str | None, checks: list[_Checked],
                    shares: dict[str, tuple[int, int]]) -> list[CheckResult]:  # fmt: skip
        """The three properties, each worth its part of every path's property units; a path
        earns it only when every input check of the path passes and no replay of the path
        showed the property's fault."""
        blocked = op.blocked() or bundle_error
        paths = list(shares)
        failing = {}  # path -> its first failed check
        for check in checks:
            if not check.passed:
                failing.setdefault(check.path, check.name)
        results = []
        for index, (key, title) in enumerate(_PROPERTIES.items()):
            name = f"{op.spec.name} {title}"
            worth = {path: _share(units, len(_PROPERTIES))[index]
                     for path, (_, units) in shares.items()}  # fmt: skip
            possible = sum(worth.values()) / _UNITS_PER_POINT
            if blocked:
                results.append(CheckResult(name, False, possible, blocked))
                continue
            faulted = op.faulted.get(key, set())
            granted = [path for path in paths if path not in failing
                       and None not in faulted and path not in faulted]  # fmt: skip
            earned = sum(worth[path] for path in granted) / _UNITS_PER_POINT
            notes = [op.faults[key]] if key in op.faults else []
            withheld = [path for path in paths if path in failing]
            if withheld and len(paths) == 1:
                notes.append(f"not graded until every input check of {op.spec.name} passes "
                             f"({failing[paths[0]]} failed): {_ONLY_RIGHT}")  # fmt: skip
            elif withheld:
                missing = "; none for ".join(
                    f"{_path_words(op.spec, path, paths)} until every input check of it passes "
                    f"({failing[path]} failed)" for path in withheld)  # fmt: skip
                notes.append(f"{earned:g} of {possible:g} points: none for {missing}: "
                             f"{_ONLY_RIGHT}")  # fmt: skip
            results.append(CheckResult(name, earned == possible, possible, "\n".join(notes),
                                       points=earned))  # fmt: skip
        return results


@dataclass(frozen=True)
class _Checked:
    """An input check's verdict, and the path whose share it counts towards."""

    name: str
    passed: bool
    message: str
    path: str


_ONLY_RIGHT = ("a property counts only for kernels that compute the right result, so a kernel "
               "right on a few easy inputs collects none of it")
_HUNG = ("A call that does not return, or whose process dies, costs its whole path: {path} "
         "earns no point until every call of it returns")


def _path_words(spec: ops.OpSpec, path: str, paths: list[str]) -> str:
    """The path in a message: the op's name where it has one path, else the path's name."""
    if len(paths) == 1:
        return spec.name
    if path == ORDINARY:
        return f"{spec.name}'s ordinary path (its own call, every input but " + ", ".join(
            p for p in paths if p != ORDINARY) + ")"
    return f"{spec.name}'s {path} path"


# --------------------------------------------------------------------------- helpers


def _launched(trace: object) -> list[str]:
    """The kernels a trace launched, in order, once each (``kernels/softmax.py::name``)."""
    launches = trace.get("launches") if type(trace) is dict else None
    return list(dict.fromkeys(
        str(launch.get("kernel", "?")) for launch in launches or () if type(launch) is dict
    ))  # fmt: skip


def _path_hint(path: _Path, reply: dict) -> str:
    """What a forced path ran, named by the kernels its trace launched (the worker's account:
    a hint)."""
    names = [name.rpartition("::")[2] for name in _launched(reply.get("trace"))]
    ran = f"it launched {', '.join(names)}" if names else "it launched no Triton kernel"
    return f"this input took {path.what}; {ran}. {path.alone}: look at the kernel it launches"


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


def _unwritten_all(output: object) -> bool:
    if type(output) is not torch.Tensor:
        return True
    mask = unwritten_mask(output)
    return mask is not None and bool(mask.all())


def _share(units: int, count: int) -> list[int]:
    """Split ``units`` over ``count`` checks as evenly as whole units allow."""
    return [units // count + (1 if i < units % count else 0) for i in range(count)]


__all__ = ["ORDINARY", "POINTS", "RECORDS_KERNELS", "SEED_VARIABLE", "PathPoints", "path_points",
           "points_for", "run"]
