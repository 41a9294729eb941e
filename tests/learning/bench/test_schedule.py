"""Does the schedule spread every case over the run, in an order the seed alone decides?"""

from collections import Counter

from learning.bench.schedule import schedule


def test_same_seed_same_order_different_seed_different_order():
    first = schedule([3, 2, 4, 3], visits=3, rounds_per_visit=3, seed=7)
    assert schedule([3, 2, 4, 3], visits=3, rounds_per_visit=3, seed=7) == first
    assert schedule([3, 2, 4, 3], visits=3, rounds_per_visit=3, seed=8) != first


def test_every_case_is_visited_the_requested_number_of_times():
    visits = schedule([2, 3, 1], visits=5, rounds_per_visit=3, seed=0)
    assert Counter(v.case for v in visits) == {0: 5, 1: 5, 2: 5}
    for case in range(3):
        numbers = [v.number for v in visits if v.case == case]
        assert numbers == [1, 2, 3, 4, 5], "a case's visits are numbered in the order they happen"


def test_every_variant_gets_samples_over_visits_rounds_per_visit():
    """samples=15, visits=5: 3 rounds a visit, each round every item exactly once."""
    items = [3, 2, 4]
    for visit in schedule(items, visits=5, rounds_per_visit=15 // 5, seed=1):
        assert len(visit.rounds) == 3
        for order in visit.rounds:
            assert sorted(order) == list(range(items[visit.case]))


def test_cases_are_interleaved_and_rounds_shuffled():
    visits = schedule([4] * 6, visits=3, rounds_per_visit=3, seed=3)
    cases = [v.case for v in visits]
    assert cases != sorted(cases), "visits should not be grouped case by case"
    orders = {order for v in visits for order in v.rounds}
    assert len(orders) > 1, "rounds should not all use one fixed variant order"
