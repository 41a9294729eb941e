"""Two variants compared round by round: the paired ratio and a sign test.

kernel-bench times every variant of a case once a round, back to back in a shuffled order
(``learning.bench.schedule``), and keeps each variant's samples in round order, so the i-th
samples of two variants were taken a few microseconds apart, under the same clocks.

Why pair them? The GPU's clocks, its temperature and whatever else runs on the machine drift
slowly: a whole round may run 10% slow, the next one fast again. The ratio of two medians
mixes that drift into the comparison; it spreads both variants' samples and can move the
medians apart by chance. A round's drift is shared by every variant timed in it, so the
ratio of two samples of one round cancels it: the median over rounds of those ratios (the
*paired ratio*) is the difference between the kernels without the difference between rounds.

Which one won each round is a coin flip when the kernels are equally fast. The sign test asks
how often a fair coin would split the rounds at least as unevenly as they did (``p``): a
variant slower in 15 of 15 rounds has p = 0.00006, in 9 of 15 p = 0.6. Rounds of one visit
share its moment, though, so they are not quite independent coins, and the p is a guide, not
proof: identical code timed twice against the same baseline once read p = 0.38 and
p = 0.0015, 0.2% apart (``results/h200/streaming-variants.log``). Below a difference of about
0.3%, a small p is not proof that one kernel is faster.

How large is the difference, and is it one that matters? :func:`paired_verdict` adds a 95%
interval of the paired ratio and holds it against a practical margin: ``same`` when the whole
interval lies within the margin (2% unless told), ``faster`` or ``slower`` when it lies wholly
beyond it, ``ambiguous`` when the run could not tell. The interval is drawn over the unit that
varies: the *visit*. A run visits each case several times, at moments spread over the run, and
times a few rounds in each; the rounds of one visit share its clocks and temperature, so the
ratio moves from visit to visit more than from round to round (in ``results/h200/all.json``
the per-round log-ratios of about half the cases correlate within a visit by more than 0.3).
Rounds taken as independent gave "95%" intervals that held the true ratio in 61-79% of
simulated runs once the visits differed by a round's spread or more. So each visit gives one
figure, the median of its rounds' log-ratios, and the interval is Student's t interval of
their mean (visits - 1 degrees of freedom): with five visits it is wide, as five moments of a
run are few. Simulated over the
recorded round noise, with visit effects from none to four times the round spread, it holds
the true ratio in 93.5-96.2% of runs (``tests/learning/report/test_interval_coverage.py``).
A run of one visit has no second moment to compare: its rounds are the units then, and its
interval says nothing of the drift between runs (the record names the unit). The interval is
a closed-form function of the samples, so a validator re-derives it exactly.

Rounds taken while the GPU was throttled can be left out (``excluded``: their indices, from
``learning.report.telemetry``); every figure of the pair then comes from the rounds kept.

Both the engine (``learning.bench.record``, writing ``paired_vs_eager`` and ``paired_vs``) and
the validator (``learning.report.validate``, re-deriving them from the samples) use these
functions, as do ``kernel-bench compare`` and ``scripts/score_targets.py``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import statistics
from collections.abc import Collection

MARGIN = 0.02  # a practical difference: 2%, either way (1/1.02 .. 1.02 as a time ratio)
CONFIDENCE = 0.95
RESAMPLES = 10_000
MIN_ROUNDS = 5  # fewer kept rounds give no interval: the verdict is ambiguous
MIN_UNITS = 2  # Student's t needs two visits (or, in a run of one visit, two rounds)
VERDICTS = ("faster", "slower", "same", "ambiguous")


def sign_test_p(slower: int, rounds: int) -> float:
    """Two-sided sign test: the chance that ``rounds`` fair coin flips split at least as
    unevenly as ``slower`` against ``rounds - slower`` (1.0 when there are no rounds)."""
    fewer = min(slower, rounds - slower)
    tail = sum(math.comb(rounds, k) for k in range(fewer + 1)) / 2**rounds
    return min(1.0, 2 * tail)


def paired(variant: dict, baseline: dict, excluded: Collection[int] = ()) -> dict | None:
    """``variant`` against ``baseline``, round by round, from their ``samples_ms``.

    ``paired_ratio``: the median over rounds of baseline / variant (above 1: the variant is
    faster, as for a ratio of medians); ``slower``: the rounds in which the variant took
    longer; ``rounds``: the rounds that were not a tie (a tie says nothing about which is
    faster and is left out); ``p``: :func:`sign_test_p` of the two. None when the samples
    cannot be paired: none kept, different counts (a run interrupted partway), or a sample
    that is not positive (a cold-cache sample minus the flush median can be), whose ratio
    means nothing. ``excluded``: indices of rounds left out (throttled ones).
    """
    ours, theirs = _kept(variant, baseline, excluded)
    if not ours or min(ours + theirs) <= 0:
        return None
    ratio = statistics.median(b / r for r, b in zip(ours, theirs, strict=True))
    untied = [(r, b) for r, b in zip(ours, theirs, strict=True) if r != b]
    slower = sum(r > b for r, b in untied)
    return {"paired_ratio": ratio, "slower": slower, "rounds": len(untied),
            "p": sign_test_p(slower, len(untied))}  # fmt: skip


def _kept(variant: dict, baseline: dict, excluded: Collection[int]) -> tuple[list, list]:
    """The two variants' samples of the rounds kept; two empty lists when they cannot pair."""
    ours, theirs = variant.get("samples_ms") or [], baseline.get("samples_ms") or []
    if not ours or len(ours) != len(theirs):
        return [], []
    drop = set(excluded)
    kept = [i for i in range(len(ours)) if i not in drop]
    return [ours[i] for i in kept], [theirs[i] for i in kept]


def verdict(interval: tuple[float, float], margin: float = MARGIN) -> str:
    """The verdict on a *time* ratio's interval (new over base, or variant over baseline;
    above 1: slower), held against ``margin`` the same way in either direction."""
    low, high = interval
    upper, lower = 1 + margin, 1 / (1 + margin)
    if lower <= low and high <= upper:
        return "same"
    if low > upper:
        return "slower"
    if high < lower:
        return "faster"
    return "ambiguous"


class Stream:
    """Random integers from a counter run through SplitMix64, in numpy's uint64 arithmetic.

    Why not numpy's own generators: their streams may change between numpy versions, and an
    interval ``kernel-bench compare`` gives two reports must come out the same with another
    numpy. SplitMix64 is a fixed function of the counter, so the same seed gives the
    same draws everywhere.
    """

    def __init__(self, seed: int) -> None:
        self.seed = seed % 2**64
        self.drawn = 0

    def integers(self, low: int, high: int, size: tuple[int, ...]):
        import numpy as np

        count = int(np.prod(size))
        with np.errstate(over="ignore"):
            z = np.arange(self.drawn, self.drawn + count, dtype=np.uint64) + np.uint64(self.seed)
            z = z + np.uint64(0x9E3779B97F4A7C15)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z = z ^ (z >> np.uint64(31))
        self.drawn += count
        return (low + (z % np.uint64(high - low)).astype(np.int64)).reshape(size)


def generator(seed: int, *names) -> Stream:
    """A stream seeded by ``seed`` and the names of what it resamples (stable everywhere: no
    Python string hash, which changes from one process to the next, and no numpy stream)."""
    digest = hashlib.sha256(json.dumps([seed, *names]).encode()).digest()
    return Stream(int.from_bytes(digest[:8], "little"))


def quantiles(values, confidence: float = CONFIDENCE) -> tuple[float, float]:
    import numpy as np

    tail = (1 - confidence) / 2
    low, high = np.quantile(values, [tail, 1 - tail])
    return float(low), float(high)


def resampled_medians(samples, resamples: int, rng):
    """Medians of ``resamples`` resamplings of ``samples`` with replacement."""
    import numpy as np

    samples = np.asarray(samples, dtype=float)
    picks = rng.integers(0, len(samples), size=(resamples, len(samples)))
    return np.median(samples[picks], axis=1)


def paired_verdict(
    variant: dict,
    baseline: dict,
    margin: float = MARGIN,
    *,
    rounds_per_visit: int = 1,
    excluded: Collection[int] = (),
    confidence: float = CONFIDENCE,
) -> dict | None:
    """``variant`` against ``baseline`` round by round, with an interval and a verdict.

    :func:`paired`'s fields (above 1 the variant is faster), plus ``paired_ratio_ci``, the
    ``confidence`` interval of the paired ratio drawn over visits (see the module's
    docstring; ``rounds_per_visit``: how many consecutive rounds each visit timed, from the
    report's settings); ``interval_unit`` (``visit``, or ``round`` in a run of one visit) and
    ``interval_units``, how many there were; ``verdict``, the variant's against the baseline
    by ``margin`` (``faster``: the variant is faster); ``margin``; ``excluded_rounds``, how
    many rounds were left out. With fewer than :data:`MIN_ROUNDS` rounds kept the interval is
    None and the verdict ``ambiguous``. None where :func:`paired` finds no pairs.
    """
    pairs = paired(variant, baseline, excluded)
    if pairs is None:
        return None
    ours, theirs = _kept(variant, baseline, excluded)
    dropped = len(variant["samples_ms"]) - len(ours)
    unit, values = _units(variant, baseline, excluded, max(1, rounds_per_visit))
    if len(ours) < MIN_ROUNDS or len(values) < MIN_UNITS:
        interval, judged = None, "ambiguous"
    else:
        low, high = _t_interval(values, confidence)
        # the interval of baseline/variant, as a time ratio variant/baseline, is (1/high, 1/low)
        interval, judged = [low, high], verdict((1 / high, 1 / low), margin)
    return {**pairs, "paired_ratio_ci": interval, "interval_unit": unit,
            "interval_units": len(values), "verdict": judged, "margin": margin,
            "excluded_rounds": dropped}  # fmt: skip


def _units(variant: dict, baseline: dict, excluded: Collection[int],
           rounds_per_visit: int) -> tuple[str, list[float]]:  # fmt: skip
    """The figures the interval is drawn from: per visit (consecutive ``rounds_per_visit``
    rounds, the last perhaps cut short), the median of its kept rounds' log(baseline /
    variant); in a run of one visit, each kept round's own."""
    ours, theirs, drop = variant["samples_ms"], baseline["samples_ms"], set(excluded)
    visits: dict[int, list[float]] = {}
    for index, (mine, other) in enumerate(zip(ours, theirs, strict=True)):
        if index not in drop:
            visits.setdefault(index // rounds_per_visit, []).append(math.log(other / mine))
    if len(visits) >= MIN_UNITS:
        return "visit", [statistics.median(logs) for logs in visits.values()]
    return "round", [log for logs in visits.values() for log in logs]


def _t_interval(values: list[float], confidence: float) -> tuple[float, float]:
    """Student's t interval of the mean of ``values`` (logs), returned as ratios."""
    mean = statistics.fmean(values)
    spread = statistics.stdev(values) / math.sqrt(len(values))
    half = _t_quantile(confidence, len(values) - 1) * spread
    return math.exp(mean - half), math.exp(mean + half)


@functools.lru_cache(maxsize=64)
def _t_quantile(confidence: float, freedom: int) -> float:
    """Student's t quantile for a two-sided ``confidence`` interval (a validator asks for the
    same few thousands of times)."""
    from scipy import stats as scipy_stats

    return float(scipy_stats.t.ppf((1 + confidence) / 2, freedom))


def relative_spread(samples: list[float]) -> float | None:
    """The samples' relative standard deviation, in percent (nvbench's noise figure); None
    with fewer than two samples or a mean that is not positive."""
    if len(samples) < 2:
        return None
    mean = statistics.fmean(samples)
    return 100 * statistics.stdev(samples) / mean if mean > 0 else None
