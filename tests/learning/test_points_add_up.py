"""Do the points a learner sees beside each check add up to what the exercise is worth?"""

import pytest

from learning import manifest
from learning.check import foundations, measurement

TABLES = {"measurement": measurement.CHECKS} | {
    name: exercise.checks for name, exercise in foundations.EXERCISES.items()
}


@pytest.mark.parametrize("exercise", sorted(TABLES))
def test_the_checks_points_sum_to_the_manifests(exercise):
    shown = sum(check.points for check in TABLES[exercise])
    assert shown == manifest.load().exercise(exercise).points, (
        f"{exercise}: the checks are worth {shown:g} points in all, the manifest says "
        f"{manifest.load().exercise(exercise).points:g}: a learner would read e.g. 9.09/10"
    )
