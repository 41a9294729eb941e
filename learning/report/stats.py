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

How large is the difference, and is it one that matters? :func:`paired_verdict` adds a
percentile bootstrap interval of the paired ratio (whole rounds resampled, so each round keeps
its two samples together and the drift between rounds stays cancelled) and holds it against
a practical margin: ``same`` when the whole interval lies within the margin (2% unless told),
``faster`` or ``slower`` when it lies wholly beyond it, ``ambiguous`` when the rounds could not
tell. The resampling draws from a generator seeded by the pair's own names, so the same
samples give the same interval on every machine, and a validator can re-derive it.

Rounds taken while the GPU was throttled can be left out (``excluded``: their indices, from
``learning.report.telemetry``); every figure of the pair then comes from the rounds kept.

Both the engine (``learning.bench.record``, writing ``paired_vs_eager`` and ``paired_vs``) and
the validator (``learning.report.validate``, re-deriving them from the samples) use these
functions, as do ``kernel-bench compare`` and ``scripts/score_targets.py``.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from collections.abc import Collection

MARGIN = 0.02  # a practical difference: 2%, either way (1/1.02 .. 1.02 as a time ratio)
CONFIDENCE = 0.95
RESAMPLES = 10_000
MIN_ROUNDS = 5  # fewer, and the resampled medians can only repeat a sample or two
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
    interval a report records must come out the same when a validator with another numpy
    re-derives it. SplitMix64 is a fixed function of the counter, so the same seed gives the
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
    seed: int = 0,
    names: tuple = (),
    excluded: Collection[int] = (),
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
) -> dict | None:
    """``variant`` against ``baseline`` round by round, with an interval and a verdict.

    :func:`paired`'s fields (above 1 the variant is faster), plus ``paired_ratio_ci``, the
    percentile bootstrap interval of the paired ratio (rounds resampled whole);
    ``verdict``, the variant's against the baseline by ``margin`` (``faster``: the variant
    is faster); ``margin``; ``excluded_rounds``, how many rounds were left out. With fewer
    than :data:`MIN_ROUNDS` rounds the interval is None and the verdict ``ambiguous``: so few
    rounds resolve nothing. None where :func:`paired` finds no pairs.
    """
    pairs = paired(variant, baseline, excluded)
    if pairs is None:
        return None
    ours, theirs = _kept(variant, baseline, excluded)
    dropped = len(variant["samples_ms"]) - len(ours)
    if len(ours) < MIN_ROUNDS:
        interval, judged = None, "ambiguous"
    else:
        import numpy as np

        per_round = np.asarray(theirs, dtype=float) / np.asarray(ours, dtype=float)
        rng = generator(seed, "within", *names)
        low, high = quantiles(resampled_medians(per_round, resamples, rng), confidence)
        # the interval of baseline/variant, as a time ratio variant/baseline, is (1/high, 1/low)
        interval, judged = [low, high], verdict((1 / high, 1 / low), margin)
    return {**pairs, "paired_ratio_ci": interval, "verdict": judged, "margin": margin,
            "excluded_rounds": dropped}  # fmt: skip


def relative_spread(samples: list[float]) -> float | None:
    """The samples' relative standard deviation, in percent (nvbench's noise figure); None
    with fewer than two samples or a mean that is not positive."""
    if len(samples) < 2:
        return None
    mean = statistics.fmean(samples)
    return 100 * statistics.stdev(samples) / mean if mean > 0 else None
