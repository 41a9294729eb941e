"""What the grader found: one :class:`Finding` per problem, each with a stable code.

A finding either fails the report it is about (``review=False``) or flags it for a person to
look at (``review=True``): plausibility and copying are questions, not verdicts. The code is
the first thing in every reason string (``[learner-file] ...``), so the CSV, the feedback file
and the tests all match on the same words.
"""

from __future__ import annotations

from dataclasses import dataclass

# code -> what the learner should do about it (the feedback file's "what to fix").
FIXES: dict[str, str] = {
    "unreadable": "submit the JSON file kernel-bench wrote, unedited",
    "schema": "submit a report written by this course's kernel-bench (schema version 2), unedited",
    "incomplete": "the run was interrupted; run the same command again until it finishes",
    "consistency": "figures were edited after the run; submit the report kernel-bench wrote",
    "settings": "submit the report kernel-bench wrote; its settings contradict each other",
    "environment": "run kernel-bench on a machine where it can read the GPU, driver and "
    "utilization, and submit its report unedited",
    "release-file": "run kernel-bench from an unmodified copy of the course release (the "
    "learning/ and reference/ folders) and submit the new report",
    "learner-file": "re-run kernel-bench on the exact files you submit, after your last edit",
    "fingerprint-incomplete": "submit the report kernel-bench wrote; its fingerprint lacks "
    "files every run executes",
    "outside-course": "run kernel-bench on your exercises/ files inside the course folder",
    "claims-reference": "benchmark your own kernel (.venv/bin/kernel-bench --impl learner); a "
    "reference run measures the course's code, not yours",
    "copied": "submit a report of your own code",
    "reference-copy": "write the kernel yourself; reference/ holds the kernel yours is measured "
    "against, not an answer to hand in",
    "plausibility": "nothing, if the figures are genuine: the instructor re-runs the command",
    "check": "fix the kernel until `.venv/bin/python -m learning.check EXERCISE` passes",
    "not-graded": "nothing on your side: the checker failed on this exercise, so it is not "
    "graded yet; the instructor grades it again",
    "no-reports": "run .venv/bin/kernel-bench --impl learner and put its JSON report under "
    "reports/",
    "derived": "submit the report kernel-bench wrote: a case's shape, dtype, bytes or FLOPs are "
    "not what the course's op registry gives",
    "cases": "submit the report kernel-bench wrote, with every case its settings ask for",
    "variants": "benchmark your own kernel with .venv/bin/kernel-bench --impl learner and "
    "submit that report unedited",
    "correctness": "submit the report kernel-bench wrote; its oracle check records were edited",
    "copied-samples": "submit the timings kernel-bench measured for your own kernel",
    "learner-untimed": "fix the kernel until it passes (.venv/bin/python -m learning.check "
    "EXERCISE), "
    "then run kernel-bench --impl learner again",
    "dynamic-code": "import your helpers with import statements; exec, eval, importlib and "
    "reading .py files load code that no report can fingerprint",
    "retime": "make sure the submitted exercises/ are the files you benchmarked, and submit the "
    "report kernel-bench wrote for them",
    "archive": "hand in the archive python -m learning handin wrote, unedited",
    "grader-error": "nothing to fix on your side if the report is genuine: tell the instructor",
}


@dataclass(frozen=True)
class Finding:
    code: str  # a key of FIXES
    message: str
    review: bool = False  # True: flagged for review; False: the report (or check) fails

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"

    @property
    def fix(self) -> str:
        return FIXES.get(self.code, "")
