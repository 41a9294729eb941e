"""When each variant is timed: visits in a seeded random order, shuffled rounds inside a visit.

Timing every variant of a case back to back, in a fixed order, lets slow drift (clocks,
temperature, another tenant) land on one variant. So each case is *visited* several times in a
random order across the whole run, and inside a visit the case's variants are timed in rounds,
each round in a fresh random order. One ``random.Random(seed)`` makes every choice, so the same
seed gives the same schedule.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Visit:
    case: int  # index into the run's cases
    number: int  # 1 for the case's first visit, up to the number of visits
    rounds: tuple[tuple[int, ...], ...]  # per round: the case's item indices in timed order


def schedule(
    items_per_case: Sequence[int], visits: int, rounds_per_visit: int, seed: int
) -> list[Visit]:
    """The run's visits: every case ``visits`` times, each visit ``rounds_per_visit`` rounds.

    ``items_per_case[i]`` is how many things case ``i`` times (its variants, plus the flush-only
    graph in cold mode). Every item appears exactly once in every round.
    """
    rng = random.Random(seed)
    order = [case for case in range(len(items_per_case)) for _ in range(visits)]
    rng.shuffle(order)
    seen = [0] * len(items_per_case)
    plan = []
    for case in order:
        seen[case] += 1
        count = items_per_case[case]
        rounds = tuple(tuple(rng.sample(range(count), count)) for _ in range(rounds_per_visit))
        plan.append(Visit(case=case, number=seen[case], rounds=rounds))
    return plan
