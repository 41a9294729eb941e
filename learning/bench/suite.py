"""The shape suite: (op, shape, dtype) cases that nobody chose by hand, drawn from a seed.

A kernel tuned at its op's default shapes can lose at the shapes callers pass. The suite draws
cases over the ranges the ops are used at, from the registry and a seed: the same seed gives
the same list on any machine, another seed a fresh one, and a report records both the suite's
name and its seed (``settings.suite``, ``settings.suite_seed``), so a reader can draw the list
again (:func:`cases`). ``kernel-bench --suite NAME [--suite-seed S]`` runs it.

* **Families, from the registry.** A family is a set of shape axes, forward or training
  (:data:`FAMILIES`); its ops are every op of :data:`learning.ops.OPS` whose ``shape_names``
  are those axes and whose training flag matches. Nothing here names an op: an op added to the
  registry with row axes joins ``rows`` (or ``rows-training``), and an op whose axes no family
  has (attention's B x H x N x D) is in none. Each op draws from its own generator, seeded by
  the suite's seed and the op's name, so adding an op changes no other op's cases.
* **Rows (M x N).** Widths span 32 to 262,144 in ``cases_per_op`` strata of equal log width,
  one case each, the narrowest below 64 and the widest above 131,072; each stratum's width is
  a power of two, a multiple of 8 between powers, an odd or a prime number, in turn from a
  drawn start. Row counts span 1 to 10^6, log-uniformly in shuffled strata; the narrowest width
  takes the top stratum (hundreds of thousands of rows) and the widest the bottom one (one
  row), so every op has both ends.
* **GEMM (M x N x K).** Each dimension spans 1 to 16,384, in five regimes taken in turn:
  ``any`` (each dimension log-uniform), ``large`` (each from 1,024: the tensor cores' work),
  ``skinny`` (M <= 256, N and K from 1,024), ``k-heavy`` (M, N <= 32 and K >= 16 M N) and
  ``vector`` (M = 1); each dimension is rounded to one of the four kinds above, in turn, so
  most shapes are irregular.
* **Dtypes.** Every dtype the op supports, in equal numbers (one more for some when they do not
  divide), shuffled over the op's cases.
* **Caps.** A case is kept within :data:`CASE_BYTES_CAP`: its inputs and outputs, counted as
  the float64 oracle holds them (``logical_bytes`` at float64), at most 4 GiB. The oracle's
  copies, its intermediates and every baseline's are each at most that: at cases of exactly
  the cap kernel-bench peaked at 12.3 GiB allocated on the H100 (rmsnorm, fp32, with
  ``--compile``), which an 80 GB card holds. Every tensor stays below 2^31 elements (4 GiB of
  float64 is 2^29 elements; a GEMM operand is at most 16,384^2 = 2^28): the kernels index
  with 32-bit offsets, and a family past 2^31 elements belongs with kernels that take 64-bit
  offsets. A case's call is also kept within
  :data:`MAX_CALL_S` at the rates below, so that no one case takes a part's time; a draw past
  either cap shrinks (rows: fewer rows; GEMM: its largest free dimension) until it fits.
* **Parts.** A family with ``parts`` > 1 is split into parts named ``<family>-<i>``, each a
  GPU call's worth (``learning.report.sweeps.CALL_BUDGET_S``): the cases go, largest estimate
  first, to the part with the least so far (:func:`estimate_s`). A part that holds row cases
  also holds the streaming ceiling's case (``sweeps.CEILING_CASE``), so that every share of the
  ceiling is judged against one measured in the same run.
* **On the CPU** (the interpreter) each dimension is mapped log-linearly from its range onto a
  small one (:class:`Axis`), as kernel-bench's CPU runs use small shapes: the same cases,
  scaled down, and duplicates dropped.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from learning import ops

if TYPE_CHECKING:
    from learning.ops.spec import OpSpec

Shape = tuple[int, ...]
Case = tuple["OpSpec", Shape, str]  # (spec, shape, dtype name), as config.select gives them

CASE_BYTES_CAP = 4 * 2**30  # a case's inputs and outputs in float64 (see the docstring)
MAX_CALL_S = 3e-3  # the longest call a case may have at the rates below
SEED_LIMIT = 2**32  # --suite-seed is an integer from 0 to SEED_LIMIT - 1

# The cost model, sized on the H100. Rates: add 16384 x 4096 streams 3.0e12 B/s; matmul 8192^3
# runs at about 700 TFLOP/s in fp16 and bf16 and 51 in fp32, TF32 off (results/h100/all.json).
# A variant's call takes up to 4x the roofline (the eager baselines; 3.9x over the suite's
# rows-training part). A family's overhead_s is a case's time besides its samples: compile,
# JIT, autotuning and the oracle's gate; measured per case on the H100 at seed 0: rows 1.4 s,
# rows-training 3.1 s, gemm-training 14.5 s (three autotuned GEMMs a step; the forward GEMM,
# one of them, is given 10 s). Each is set above what was measured, so a part fits its call.
STREAM_BYTES_PER_S = 3.0e12
TENSOR_FLOPS_PER_S: Mapping[str, float] = MappingProxyType(
    {"float16": 700e12, "bfloat16": 700e12, "float32": 50e12}
)
CALL_FLOOR_S = 5e-6  # the shortest call a graph replay times
VARIANT_SLOWDOWN = 4.0
COLD_FLUSH_S = 40e-6  # a cold call's L2 flush: twice the L2 read once
PARTITION_CALLS = 15 * 30  # calls a variant takes in the recorded sweeps (15 samples of 30)
KINDS = ("power of two", "multiple of 8", "odd", "prime")


@dataclass(frozen=True)
class Axis:
    """One shape axis of a family: the range drawn from, and the small range a CPU run maps
    it onto (log-linearly, so a narrow row stays narrow)."""

    name: str
    low: int
    high: int
    cpu_low: int
    cpu_high: int

    def on_cpu(self, size: int) -> int:
        if self.high == self.low:
            return self.cpu_low
        share = math.log(size / self.low) / math.log(self.high / self.low)
        return max(1, round(self.cpu_low * (self.cpu_high / self.cpu_low) ** share))


@dataclass(frozen=True)
class Family:
    """Cases of every op with these axes (forward or training steps), ``cases_per_op`` each."""

    name: str
    axes: tuple[Axis, ...]
    training: bool
    cases_per_op: int
    parts: int  # GPU calls the family is split into
    overhead_s: float  # a case's seconds besides its samples: compile, JIT, the oracle's gate
    # (generator, family, one "fits the caps?" test a case) -> one shape a case
    draw: Callable[[random.Random, Family, list[Callable[[Shape], bool]]], list[Shape]]

    def holds(self, spec: OpSpec) -> bool:
        """Is ``spec`` one of this family's ops: its axes, forward or training?"""
        names = tuple(axis.name for axis in self.axes)
        return spec.shape_names == names and spec.training == self.training

    def part_names(self) -> tuple[str, ...]:
        if self.parts == 1:
            return (self.name,)
        return tuple(f"{self.name}-{number}" for number in range(1, self.parts + 1))


# --------------------------------------------------------------------------- sizes


def _primes_below(limit: int) -> list[int]:
    sieve = bytearray([1]) * limit
    sieve[:2] = b"\x00\x00"
    for n in range(2, math.isqrt(limit - 1) + 1):
        if sieve[n]:
            sieve[n * n :: n] = bytearray(len(range(n * n, limit, n)))
    return [n for n in range(limit) if sieve[n]]


_PRIMES: list[int] = []


def _candidates(kind: str, low: int, high: int) -> list[int] | range:
    """The sizes of ``kind`` in [low, high] (possibly none)."""
    if kind == "power of two":
        return [1 << k for k in range(high.bit_length()) if low <= 1 << k <= high]
    if kind == "multiple of 8":
        return [n for n in range(-(-low // 8) * 8, high + 1, 8) if n & (n - 1)]
    if kind == "odd":
        return range(low | 1, high + 1, 2)
    if not _PRIMES or _PRIMES[-1] < high:
        _PRIMES[:] = _primes_below(max(high + 1, 2**18 + 1))
    return _PRIMES[bisect.bisect_left(_PRIMES, low) : bisect.bisect_right(_PRIMES, high)]


def sized(kind: str, target: float, low: int, high: int) -> int:
    """The size of ``kind`` in [low, high] nearest ``target`` (by ratio); the nearest integer
    when the range holds none of that kind."""
    found = _candidates(kind, low, high)
    if not len(found):
        return min(high, max(low, round(target)))
    at = bisect.bisect_left(found, target)
    near = [found[i] for i in (at - 1, at) if 0 <= i < len(found)]
    return min(near, key=lambda n: (abs(math.log(n / target)), n))


def _log_uniform(rng: random.Random, low: float, high: float) -> float:
    return low * (high / low) ** rng.random()


# --------------------------------------------------------------------------- draws


def _row_shapes(rng: random.Random, family: Family, fits: list) -> list[Shape]:
    """M x N: widths in strata of equal log width, row counts log-uniform in shuffled strata,
    each row count cut to what the case's caps allow."""
    rows_axis, width_axis = family.axes
    count = len(fits)
    ratio = width_axis.high / width_axis.low
    start = rng.randrange(len(KINDS))
    row_strata = list(range(1, count - 1))
    rng.shuffle(row_strata)
    row_strata = [count - 1, *row_strata, 0][:count]  # narrowest: most rows; widest: one
    shapes = []
    for index, fit in enumerate(fits):
        low = math.ceil(width_axis.low * ratio ** (index / count))
        high = math.floor(width_axis.low * ratio ** ((index + 1) / count))
        target = width_axis.low * ratio ** ((index + rng.random()) / count)
        width = sized(KINDS[(start + index) % len(KINDS)], target, low, max(low, high))
        most = _largest(lambda rows, w=width, fit=fit: fit((rows, w)), rows_axis)
        share = (row_strata[index] + rng.random()) / count
        rows = max(rows_axis.low, min(most, math.floor((most + 1) ** share)))
        shapes.append((rows, width))
    return shapes


def _largest(fits: Callable[[int], bool], axis: Axis) -> int:
    """The largest size of ``axis`` that ``fits`` (at least its low end)."""
    low, high = axis.low, axis.high
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(middle) else (low, middle - 1)
    return low


REGIMES = ("any", "large", "skinny", "k-heavy", "vector")


def _gemm_shapes(rng: random.Random, family: Family, fits: list) -> list[Shape]:
    """M x N x K in the five regimes, in turn from a drawn start; the free dimensions shrink
    until the case fits its caps."""
    low = min(axis.low for axis in family.axes)
    high = max(axis.high for axis in family.axes)
    start, kind_start = rng.randrange(len(REGIMES)), rng.randrange(len(KINDS))
    shapes = []
    for index, fit in enumerate(fits):
        regime = REGIMES[(start + index) % len(REGIMES)]
        kinds = [KINDS[(kind_start + index + axis) % len(KINDS)] for axis in range(3)]
        if regime == "any":
            bounds = [(low, high)] * 3
        elif regime == "large":
            bounds = [(1024, high)] * 3
        elif regime == "skinny":
            bounds = [(low, 256), (1024, high), (1024, high)]
        elif regime == "k-heavy":
            bounds = [(low, 32), (low, 32), None]
        else:
            bounds = [(1, 1), (256, high), (256, high)]
        dims = [0, 0, 0]
        for axis in (0, 1):
            dims[axis] = sized(kinds[axis], _log_uniform(rng, *bounds[axis]), *bounds[axis])
        if bounds[2] is None:  # K >> M N
            bounds[2] = (min(high, max(1024, 16 * dims[0] * dims[1])), high)
        dims[2] = sized(kinds[2], _log_uniform(rng, *bounds[2]), *bounds[2])
        free = [axis for axis in range(3) if bounds[axis][0] < bounds[axis][1]]
        while not fit(tuple(dims)):
            axis = max(free, key=lambda a: dims[a])
            floor = bounds[axis][0]
            if dims[axis] == floor:  # nothing left to shrink: a cap no shape of it meets
                free.remove(axis)
                if not free:
                    raise ValueError(f"no {regime} GEMM shape fits the suite's caps")
                continue
            smaller = max(floor, dims[axis] * 3 // 4)
            dims[axis] = sized(kinds[axis], smaller, floor, smaller)
        shapes.append(tuple(dims))
    return shapes


_ROW_AXES = (Axis("M", 1, 10**6, 1, 64), Axis("N", 32, 262144, 8, 1024))
_GEMM_AXES = tuple(Axis(name, 1, 16384, 1, 96) for name in "MNK")
FAMILIES: tuple[Family, ...] = (
    Family(
        name="rows", axes=_ROW_AXES, training=False, cases_per_op=20, parts=2, overhead_s=2.5,
        draw=_row_shapes,
    ),
    Family(
        name="rows-training", axes=_ROW_AXES, training=True, cases_per_op=20, parts=1,
        overhead_s=5.0, draw=_row_shapes,
    ),
    Family(
        name="gemm", axes=_GEMM_AXES, training=False, cases_per_op=30, parts=1, overhead_s=10.0,
        draw=_gemm_shapes,
    ),
    Family(
        name="gemm-training", axes=_GEMM_AXES, training=True, cases_per_op=20, parts=1,
        overhead_s=20.0, draw=_gemm_shapes,
    ),
)  # fmt: skip
# Every name --suite takes: a family (all of its cases) and each of its parts.
SUITES: Mapping[str, tuple[Family, int | None]] = MappingProxyType(
    {
        **{family.name: (family, None) for family in FAMILIES},
        **{
            name: (family, number)
            for family in FAMILIES
            if family.parts > 1
            for number, name in enumerate(family.part_names())
        },
    }
)
PARTS: tuple[str, ...] = tuple(name for family in FAMILIES for name in family.part_names())


def check(name: str, seed: object = 0) -> None:
    """A ValueError in one line for a suite name or seed kernel-bench cannot run; imports no
    definition (and no torch)."""
    if name not in SUITES:
        raise ValueError(f"unknown suite {name!r}; choose one of {', '.join(SUITES)}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < SEED_LIMIT:
        raise ValueError(
            f"--suite-seed must be an integer from 0 to {SEED_LIMIT - 1}, got {seed!r}"
        )


# --------------------------------------------------------------------------- the cases


def members(family: Family) -> list[OpSpec]:
    """The registry's ops in ``family``, in index order."""
    return [spec for spec in ops.OPS.values() if family.holds(spec)]


def family_of(spec: OpSpec) -> Family:
    """The family ``spec`` belongs to; a ValueError for an op no family holds."""
    for family in FAMILIES:
        if family.holds(spec):
            return family
    raise ValueError(f"{spec.name} ({'x'.join(spec.shape_names)}) is in no shape suite")


def fits(spec: OpSpec, shape: Shape, dtype: str) -> bool:
    """Is the case within both caps: float64 bytes, and the time of one call?"""
    import torch  # here, not above: the suite's names and checks need no torch

    if spec.logical_bytes(shape, torch.float64) > CASE_BYTES_CAP:
        return False
    return call_s(spec, shape, dtype) <= MAX_CALL_S


def call_s(spec: OpSpec, shape: Shape, dtype: str) -> float:
    """One call's time at the model's rates: the larger of its bytes and its FLOPs."""
    moved = spec.logical_bytes(shape, ops.dtype_from_name(dtype)) / STREAM_BYTES_PER_S
    return max(moved, spec.flops(shape) / TENSOR_FLOPS_PER_S[dtype], CALL_FLOOR_S)


def estimate_s(spec: OpSpec, shape: Shape, dtype: str, calls: int, cold: bool) -> float:
    """A case's kernel-bench seconds: its family's overhead, then ``calls`` timed calls of each
    variant (the PyTorch baselines, torch.compile's and the reference)."""
    variants = len(spec.baselines) + 2
    one = VARIANT_SLOWDOWN * call_s(spec, shape, dtype) + (COLD_FLUSH_S if cold else 0.0)
    return family_of(spec).overhead_s + variants * calls * one


def _op_cases(family: Family, spec: OpSpec, seed: int) -> list[Case]:
    rng = random.Random(f"suite {seed} {spec.name}")
    names = [ops.dtype_name(dtype) for dtype in spec.dtypes]
    dtypes = [names[i % len(names)] for i in range(family.cases_per_op)]
    rng.shuffle(dtypes)
    checks = [lambda shape, d=dtype: fits(spec, shape, d) for dtype in dtypes]
    shapes = family.draw(rng, family, checks)
    return [(spec, shape, dtype) for shape, dtype in zip(shapes, dtypes, strict=True)]


def _parts(family: Family, drawn: list[Case]) -> list[list[Case]]:
    """The family's cases in ``family.parts`` parts of about equal estimated time."""
    weights = [estimate_s(*case, PARTITION_CALLS, False) for case in drawn]
    order = sorted(range(len(drawn)), key=lambda i: (-weights[i], i))
    totals = [0.0] * family.parts
    where = [0] * len(drawn)
    for index in order:
        part = min(range(family.parts), key=lambda p: (totals[p], p))
        where[index], totals[part] = part, totals[part] + weights[index]
    return [
        [case for i, case in enumerate(drawn) if where[i] == part] for part in range(family.parts)
    ]


def cases(name: str, seed: int = 0, device: str = "cuda") -> list[Case]:
    """The suite ``name``'s cases for ``seed``: ``(spec, shape, dtype name)``, op by op in the
    registry's order; on ``device="cpu"`` each shape mapped onto the CPU's small ranges."""
    check(name, seed)
    family, part = SUITES[name]
    drawn = [case for spec in members(family) for case in _op_cases(family, spec, seed)]
    chosen = drawn if part is None else _parts(family, drawn)[part]
    chosen = [*chosen, *_ceiling(chosen)]
    if device == "cpu":
        chosen = [(spec, _on_cpu(spec, shape), dtype) for spec, shape, dtype in chosen]
    unique: dict[tuple, Case] = {}
    for spec, shape, dtype in chosen:
        unique.setdefault((spec.name, shape, dtype), (spec, shape, dtype))
    return list(unique.values())


def _ceiling(chosen: list[Case]) -> list[Case]:
    """The streaming ceiling's case, where ``chosen`` holds cases of its op's axes (rows)."""
    from learning.report.sweeps import CEILING_CASE

    op, shape, dtype = CEILING_CASE
    spec = ops.OPS[op]
    held = any(case_spec.shape_names == spec.shape_names for case_spec, _, _ in chosen)
    return [(spec, tuple(shape), dtype)] if held else []


def _on_cpu(spec: OpSpec, shape: Shape) -> Shape:
    axes = family_of(spec).axes
    return tuple(axis.on_cpu(size) for axis, size in zip(axes, shape, strict=True))
