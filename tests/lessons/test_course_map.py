"""Do the course's two maps, the README's "The path through the course" and
`lessons/schedule.md`, show the course that `course_manifest.toml` lists?

Everything is derived from the manifest (through `learning.manifest`), never restated here:
each map lists every lesson once, with that lesson's exercises in the same row; the two maps
put each lesson in the same week, no lesson before one it needs, and no lesson that needs a
GPU in a week marked "no"; and both name the same first lesson, one that needs no other.
"""

from __future__ import annotations

from collections import Counter

import pytest
from course_map import (
    README,
    SCHEDULE,
    Row,
    course_order,
    readme_map,
    schedule_map,
    starts,
)

from learning import manifest

MANIFEST = manifest.load()
LESSONS = {lesson.number: lesson for lesson in MANIFEST.lessons.values()}
MAPS = {"README.md": readme_map, "lessons/schedule.md": schedule_map}


def lesson_problems(rows: list[Row]) -> list[str]:
    """Lessons of the manifest a map leaves out or lists twice, and lessons it invents."""
    counts = Counter(course_order(rows))
    problems = [f"lesson {n:02d} ({LESSONS[n].title}) is missing"
                for n in LESSONS if counts[n] == 0]  # fmt: skip
    problems += [f"lesson {n:02d} is listed {c} times" for n, c in counts.items() if c > 1]
    problems += [f"lesson {n:02d} is not in the manifest" for n in counts if n not in LESSONS]
    return problems


def exercise_problems(rows: list[Row]) -> list[str]:
    """Rows whose exercises are not exactly those their lessons set, in the manifest."""
    problems = []
    for row in rows:
        expected = [name for n in row.lessons if n in LESSONS for name in LESSONS[n].exercises]
        if sorted(row.exercises) != sorted(expected):
            problems.append(f"week {row.week}: lessons {row.lessons} set exercises {expected} "
                            f"(the manifest), the map lists {list(row.exercises)}")  # fmt: skip
    return problems


@pytest.mark.parametrize("name", MAPS)
def test_each_map_lists_every_lesson_of_the_manifest_once(name):
    problems = lesson_problems(MAPS[name]())
    assert not problems, f"{name}: " + "; ".join(problems)


@pytest.mark.parametrize("name", MAPS)
def test_each_map_lists_every_exercise_beside_the_lesson_that_sets_it(name):
    rows = MAPS[name]()
    problems = exercise_problems(rows)
    assert not problems, f"{name}: " + "; ".join(problems)
    listed = [exercise for row in rows for exercise in row.exercises]
    assert sorted(listed) == sorted(MANIFEST.exercises), name


def test_the_two_maps_put_each_lesson_in_the_same_week():
    weeks = {name: {n: row.week for row in read() for n in row.lessons}
             for name, read in MAPS.items()}  # fmt: skip
    readme, schedule = weeks.values()
    differ = [f"lesson {n:02d}: week {readme[n]} in README.md, week {schedule.get(n)} in "
              "lessons/schedule.md" for n in readme if readme[n] != schedule.get(n)]  # fmt: skip
    assert not differ, differ


@pytest.mark.parametrize("name", MAPS)
def test_no_lesson_comes_before_a_lesson_it_needs(name):
    position = {n: i for i, n in enumerate(course_order(MAPS[name]()))}
    early = [f"lesson {n:02d} comes before lesson {needed:02d}, which it needs"
             for n, lesson in LESSONS.items() for needed in lesson.prerequisites
             if position.get(needed, -1) > position.get(n, len(position))]  # fmt: skip
    assert not early, f"{name}: {early}"


@pytest.mark.parametrize("name", MAPS)
def test_a_week_marked_without_a_gpu_has_no_lesson_that_needs_one(name):
    for row in MAPS[name]():
        if row.gpu.lower().startswith("no"):
            needing = [n for n in row.lessons if LESSONS[n].runs_on == "gpu"]
            assert not needing, f"{name}: week {row.week} says no GPU, but {needing} need one"


def test_both_maps_name_the_same_first_lesson_and_begin_with_it():
    """README and schedule each say "start with lesson NN", the same NN; it is the first lesson
    of each table, and the manifest gives it no prerequisites."""
    named = {path.name: starts(path.read_text(encoding="utf-8")) for path in (README, SCHEDULE)}
    assert all(len(numbers) == 1 for numbers in named.values()), named
    (readme,), (schedule,) = named.values()
    assert readme == schedule, f"README starts with lesson {readme}, the schedule with {schedule}"
    for name, read in MAPS.items():
        assert course_order(read())[0] == readme, f"{name}'s table does not begin with {readme:02d}"
    assert LESSONS[readme].prerequisites == (), f"lesson {readme:02d} needs earlier lessons"


def test_a_map_that_stops_early_is_caught():
    """A README table without its last row (the lessons and exercises it holds): do the checks
    name what is missing?"""
    rows = readme_map()[:-1]
    last = readme_map()[-1]
    missing = lesson_problems(rows)
    for number in last.lessons:
        assert any(problem.startswith(f"lesson {number:02d} ") for problem in missing), missing
    listed = {exercise for row in rows for exercise in row.exercises}
    assert set(last.exercises) and not set(last.exercises) & listed
