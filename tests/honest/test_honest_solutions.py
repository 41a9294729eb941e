"""Does every honest solution of the corpus keep its full marks, and its kernel report trust?

Each solution (``tests/honest/corpus.py``) is handed in as a learner hands it in: a clone of
the course with the learner's file in place, graded by the grader's own check of each of its
exercises. A kernel solution also runs ``kernel-bench --impl learner`` on the CPU in its
clone, and the grader must trust the report (its learner variant timed, its files the
submitted ones). A checker or kernel-bench rule that refuses honest work fails here, naming
the solution and the check.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from corpus import KERNELS, PYTHON, Solution

from learning.grade import describe, find_submissions, load_release, validate_reports
from learning.grade.checks import check_submission
from learning.grade.clone import make_clone, run_bench, submit

BENCH = ("--impl", "learner", "--device", "cpu", "--samples", "2", "--visits", "1")


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    """The course as an instructor releases it (the learners' clones copy it)."""
    return make_clone(tmp_path_factory.mktemp("honest") / "release")


def _handed_in(solution: Solution, release: Path, work: Path) -> Path:
    """A learner's clone of ``release`` holding the solution's file."""
    written = work / "learner_file.py"
    written.write_bytes(solution.source(release))
    return make_clone(work / "clone", release, {solution.path: written})


def _full_marks(solution: Solution, folder: Path) -> None:
    seed = zlib.crc32(solution.name.encode())  # fixed, and different for each solution
    for exercise in solution.exercises:
        graded = check_submission(exercise, folder, seed=seed)
        assert graded.points == graded.max_points, f"{solution.name}: {describe(graded)}"


@pytest.mark.slow
@pytest.mark.parametrize("solution", KERNELS, ids=[s.name for s in KERNELS])
def test_an_honest_kernel_earns_full_marks_and_a_trusted_report(solution, release, tmp_path):
    clone = _handed_in(solution, release, tmp_path)
    report = run_bench(clone, [*solution.bench, *BENCH], tmp_path / f"{solution.name}.json")
    submissions = tmp_path / "submissions"
    folder = submit(clone, submissions, "learner", [report])
    _full_marks(solution, folder)
    (verdict,) = validate_reports(find_submissions(submissions), load_release(release))["learner"]
    assert verdict.trusted, f"{solution.name}: {[str(f) for f in verdict.failures]}"


@pytest.mark.parametrize("solution", PYTHON, ids=[s.name for s in PYTHON])
def test_an_honest_python_solution_earns_full_marks(solution, release, tmp_path):
    clone = _handed_in(solution, release, tmp_path)
    _full_marks(solution, submit(clone, tmp_path / "submissions", "learner", []))


def test_the_corpus_covers_every_kernel_exercise_and_its_patterns():
    """At least twenty kernels across every kernel exercise, ten pure-Python solutions, and
    the three patterns that once lost their marks: a .contiguous() prologue, a cast of the
    kernel's own float32 output, and the matmul TODO's path: every dtype through the learner's
    own _matmul_kernel (the persistent kernel is the course's, imported)."""
    from learning import ops

    assert len(KERNELS) >= 20 and len(PYTHON) >= 10
    assert {e for s in KERNELS for e in s.exercises} == set(ops.exercises())
    sources = {s.name: s.source().decode() for s in KERNELS}
    assert any("x = x.contiguous()" in text for text in sources.values())
    assert any("y32.to(x.dtype)" in text for text in sources.values())
    assert "return _launch(_matmul_kernel, a, b)" in sources["matmul_todo_path"]
    assert "_launch_persistent(" not in sources["matmul_todo_path"].partition("def matmul_fwd")[2]
    assert len({s.name for s in (*KERNELS, *PYTHON)}) == len(KERNELS) + len(PYTHON)
