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

Both the engine (``learning.bench.record``, writing ``paired_vs_eager``) and the validator
(``learning.report.validate``, re-deriving it from the samples) use these functions, as does
``scripts/score_targets.py``.
"""

from __future__ import annotations

import math
import statistics


def sign_test_p(slower: int, rounds: int) -> float:
    """Two-sided sign test: the chance that ``rounds`` fair coin flips split at least as
    unevenly as ``slower`` against ``rounds - slower`` (1.0 when there are no rounds)."""
    fewer = min(slower, rounds - slower)
    tail = sum(math.comb(rounds, k) for k in range(fewer + 1)) / 2**rounds
    return min(1.0, 2 * tail)


def paired(variant: dict, baseline: dict) -> dict | None:
    """``variant`` against ``baseline``, round by round, from their ``samples_ms``.

    ``paired_ratio``: the median over rounds of baseline / variant (above 1: the variant is
    faster, as for a ratio of medians); ``slower``: the rounds in which the variant took
    longer; ``rounds``: the rounds that were not a tie (a tie says nothing about which is
    faster and is left out); ``p``: :func:`sign_test_p` of the two. None when the samples
    cannot be paired: none kept, different counts (a run interrupted partway), or a sample
    that is not positive (a cold-cache sample minus the flush median can be), whose ratio
    means nothing.
    """
    ours, theirs = variant.get("samples_ms") or [], baseline.get("samples_ms") or []
    if not ours or len(ours) != len(theirs) or min(ours + theirs) <= 0:
        return None
    ratio = statistics.median(b / r for r, b in zip(ours, theirs, strict=True))
    untied = [(r, b) for r, b in zip(ours, theirs, strict=True) if r != b]
    slower = sum(r > b for r, b in untied)
    return {"paired_ratio": ratio, "slower": slower, "rounds": len(untied),
            "p": sign_test_p(slower, len(untied))}  # fmt: skip
