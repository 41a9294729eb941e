"""Does each lesson fit the minutes the course manifest states for it?

    python scripts/lesson_time.py          # reading time of every lesson against its minutes
    python scripts/lesson_time.py --run    # and each notebook run on this CPU, timed

A lesson's minutes (``minutes`` in ``course_manifest.toml``) cover reading it, running its
cells and doing its exercise. The part that can be measured is a floor: the words of its
source at ``WORDS_PER_MINUTE`` (prose and code alike; a reader slows down on code, so this is
generous to the lesson), plus the time its notebook takes to run on this machine without a
GPU, where its ``gpu``-tagged cells skip themselves (``learning.gpu_cell``), as
``tests/lessons/test_notebooks_run.py`` runs it. A lesson whose floor is over its minutes
cannot be done in them; the table says which, and the notebook test fails it.

One line per lesson: the stated minutes, the words, the reading minutes, the run seconds
(with ``--run``), and whether the floor fits. Exits 1 when a lesson does not fit.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from learning import manifest as manifest_module  # noqa: E402

WORDS_PER_MINUTE = 200
_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.DOTALL)
_WORD = re.compile(r"[A-Za-z0-9_']+")


def words(source: str) -> int:
    """The words of a lesson's MyST source, its jupytext front matter left out."""
    return len(_WORD.findall(_FRONT_MATTER.sub("", source)))


def reading_minutes(path: Path) -> float:
    return words(path.read_text(encoding="utf-8")) / WORDS_PER_MINUTE


def fits(stated_minutes: float, reading: float, run_s: float = 0.0) -> bool:
    return reading + run_s / 60 <= stated_minutes


def kernel_environment() -> dict[str, str]:
    """The environment a lesson's kernel runs in here: Triton's interpreter, no CUDA."""
    environment = dict(os.environ)
    environment.update(
        TRITON_INTERPRET="1",  # Triton kernels run in its interpreter, on the CPU
        CUDA_VISIBLE_DEVICES="",  # the same CPU run on a machine that has a GPU
        MPLBACKEND="module://matplotlib_inline.backend_inline",
        PYDEVD_DISABLE_FILE_VALIDATION="1",  # quiets a debugger warning on stderr
    )
    return environment


def run_seconds(notebook_path: Path, limit_s: float = 600) -> float:
    """How long the notebook takes to run top to bottom here, without a GPU, in lessons/."""
    import nbformat
    from nbclient import NotebookClient

    client = NotebookClient(
        nbformat.read(notebook_path, as_version=4), kernel_name="python3", timeout=limit_s,
        startup_timeout=60, shutdown_kernel="immediate",
        resources={"metadata": {"path": str(notebook_path.parent)}},
    )  # fmt: skip
    started = time.perf_counter()
    client.execute(env=kernel_environment())
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="store_true", help="also run each notebook, timed")
    args = parser.parse_args(argv)
    lessons = manifest_module.load().lessons
    print(f"{'lesson':28s} {'stated':>6s} {'words':>6s} {'reading':>8s} {'run':>7s}  fits")
    misfits = 0
    for key, lesson in lessons.items():
        source = ROOT / lesson.source
        reading = reading_minutes(source)
        run_s = run_seconds(ROOT / lesson.notebook) if args.run else 0.0
        ok = fits(lesson.minutes, reading, run_s)
        misfits += not ok
        run = f"{run_s:6.0f}s" if args.run else "      -"
        print(f"{key:28s} {lesson.minutes:5d}m {words(source.read_text(encoding='utf-8')):6d} "
              f"{reading:7.1f}m {run}  {'yes' if ok else 'NO'}")  # fmt: skip
    basis = "reading and running" if args.run else "reading alone (add --run for the cells)"
    print(f"{len(lessons) - misfits} of {len(lessons)} lessons fit their minutes, from {basis} "
          f"at {WORDS_PER_MINUTE} words a minute")  # fmt: skip
    return 1 if misfits else 0


if __name__ == "__main__":
    sys.exit(main())
