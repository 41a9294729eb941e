"""How long does the grader take to validate a class's reports?

    python scripts/grade_benchmark.py                        # 250 learners x 4 reports
    python scripts/grade_benchmark.py --learners 1000 --reports-per-learner 1

Makes one genuine CPU report (``kernel-bench --impl learner`` in a learner's clone of this
checkout), then a class of learners in a temporary folder: each learner's own
``exercises/kernels/add.py`` (an honest learner's own add kernel, from ``tests/own_work.py``,
plus a line naming the learner, so no two are alike) and copies of the report fingerprinting
it. Then it times
:func:`learning.grade.validate_reports` over the class, in a fresh process state: schema,
fingerprints against each submission and this checkout, the copying index, the figures,
plausibility. The exercise checks are not part of it (they run the learner's code).

The target is 10 s for 1,000 reports on a 2-core machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

sys.path.insert(0, str(REPO / "tests"))
from own_work import own_solution  # noqa: E402  (a learner's own add kernel, not the reference's)

from learning.grade import find_submissions, load_release, validate_reports  # noqa: E402
from learning.grade.clone import make_clone, run_bench  # noqa: E402

KERNEL = "exercises/kernels/add.py"
BENCH = ["--op", "add", "--shape", "16", "256", "--dtype", "float32", "--samples", "3",
         "--visits", "1", "--impl", "learner", "--device", "cpu"]  # fmt: skip


def make_class(folder: Path, report: dict, clone: Path, learners: int, per_learner: int) -> None:
    kernel = own_solution(KERNEL).decode()
    for number in range(learners):
        learner = f"learner{number:04d}"
        submission = folder / learner
        shutil.copytree(clone / "exercises", submission / "exercises")
        own = f"{kernel}\n# {learner}\n"
        (submission / KERNEL).write_text(own)
        copy = json.loads(json.dumps(report))
        copy["fingerprint"]["files"][KERNEL] = hashlib.sha256(own.encode()).hexdigest()
        (submission / "reports").mkdir()
        for index in range(per_learner):
            copy["settings"]["seed"] = index
            (submission / "reports" / f"add-{index}.json").write_text(json.dumps(copy, indent=1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", type=int, default=250)
    parser.add_argument("--reports-per-learner", type=int, default=4)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="grade-benchmark-") as scratch:
        work = Path(scratch)
        solution = work / "add.py"  # the learner's file once every TODO is done
        solution.write_bytes(own_solution(KERNEL))
        clone = make_clone(work / "clone", REPO, {KERNEL: solution})
        report = json.loads(run_bench(clone, BENCH, work / "add.json").read_text())
        make_class(work / "class", report, clone, args.learners, args.reports_per_learner)

        started = time.perf_counter()
        release = load_release(REPO)
        verdicts = validate_reports(find_submissions(work / "class"), release)
        elapsed = time.perf_counter() - started

    count = sum(len(reports) for reports in verdicts.values())
    trusted = sum(verdict.trusted for reports in verdicts.values() for verdict in reports)
    print(
        f"validated {count} reports of {len(verdicts)} learners in {elapsed:.2f} s "
        f"({1000 * elapsed / max(count, 1):.2f} ms a report); {trusted} trusted"
    )
    if trusted != count:
        first = next(v for reports in verdicts.values() for v in reports if not v.trusted)
        print(f"first untrusted: {first.path}: {'; '.join(map(str, first.failures))}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
