"""Does grading a class's reports stay fast: 1,000 reports in at most 10 s on 2 cores?

One genuine CPU report is made in a learner's clone of the committed release; then 1,000
learners, each with their own ``exercises/kernels/add.py`` (the reference's kernel plus a line
naming the learner, so no two are alike) and a copy of the report that fingerprints it. The
timed part is :func:`learning.grade.validate_reports` over the class, with every check the
grader makes on a report: limits, schema, fingerprints and import closures against each
submission and the release, copying, derived figures, plausibility. Every report must come out
trusted, so the time is that of the full path.

The limit is on the CPU time the grading takes (``time.process_time``: the grader is one
thread), in seconds of the course's reference machine: other work on a shared machine inflates
even CPU time (a busy sibling hyperthread, a lower clock), so the limit is multiplied by how
much longer a fixed piece of work took in CPU time, measured before and after
(``learning.check.pace``). The wall time is printed beside it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time

from own_work import own_solution  # the learner's own add kernel, not the reference's

from learning.check import pace
from learning.grade import find_submissions, load_release, validate_reports
from learning.grade.clone import make_clone, run_bench

LEARNERS = 1000
LIMIT_S = 10.0
KERNEL = "exercises/kernels/add.py"
BENCH = ["--op", "add", "--shape", "16", "256", "--dtype", "float32", "--samples", "3",
         "--visits", "1", "--impl", "learner", "--device", "cpu"]  # fmt: skip


def test_a_thousand_reports_are_graded_within_ten_seconds(tmp_path):
    release = make_clone(tmp_path / "release")
    solved = tmp_path / "add.py"
    solved.write_bytes(own_solution(KERNEL, release))
    clone = make_clone(tmp_path / "clone", release, {KERNEL: solved})
    report = json.loads(run_bench(clone, BENCH, tmp_path / "add.json").read_text())
    kernel = solved.read_text()
    for number in range(LEARNERS):
        learner = f"learner{number:04d}"
        folder = tmp_path / "class" / learner
        shutil.copytree(clone / "exercises", folder / "exercises")
        own = f"{kernel}\n# {learner}\n"
        (folder / KERNEL).write_text(own)
        report["fingerprint"]["files"][KERNEL] = hashlib.sha256(own.encode()).hexdigest()
        (folder / "reports").mkdir()
        (folder / "reports" / "add.json").write_text(json.dumps(report, indent=1))

    before = pace.measure()
    wall, cpu = time.perf_counter(), time.process_time()
    verdicts = validate_reports(find_submissions(tmp_path / "class"), load_release(release))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    slowdown = max(before.cpu_slowdown, pace.measure().cpu_slowdown)

    untrusted = [v for reports in verdicts.values() for v in reports if not v.trusted]
    assert len(verdicts) == LEARNERS and not untrusted, untrusted[:1]
    print(f"\n{LEARNERS} reports: {cpu:.1f} s of CPU, {wall:.1f} s of wall time")
    assert cpu <= LIMIT_S * slowdown, (
        f"{LEARNERS} reports took {cpu:.1f} s of CPU; the limit is {LIMIT_S:g} s on the "
        f"reference machine, {LIMIT_S * slowdown:.1f} s at this machine's pace"
    )
