"""What a lesson's cells tagged ``gpu`` call: run the measurement on a GPU, or say why not.

A cell tagged ``gpu`` measures what only a CUDA GPU can show. Without one it runs nothing and
prints one line, which says what the cell would do and why it did not::

    gpu cell skipped, no CUDA GPU here: on a GPU it runs .venv/bin/python -m learning.bench ...

With a GPU it runs the command in the course folder, with this notebook's own Python
(``sys.executable``, so a notebook started without the course's environment on ``PATH`` finds
the course's packages all the same), and prints the end of what the command printed.

* :func:`bench` times kernels with ``kernel-bench`` (``python -m learning.bench``), by default
  your own (``--impl learner``), and writes the report to ``results/local/<name>.json``,
  replacing an earlier one of that name (``--force``): running the cell again after you edit a
  kernel is how the report comes to describe your code as it is now.
* :func:`script` runs one of the course's ``scripts/`` the same way.
* :func:`on_gpu` is for a cell whose GPU work is its own code: it says whether to run it, and
  prints the line when not.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from learning.report import REPO_ROOT

TAG = "gpu"  # the cell tag, in a lesson's source: `:tags: [gpu]`
SKIPPED = "gpu cell skipped, "  # how every line this module prints in place of a run begins
REPORTS = Path("results") / "local"  # the reports' folder, in the course folder
IMPLS = ("learner", "reference")  # kernel-bench's --impl: your kernels, or the course's
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_OWN_OPTIONS = ("--output", "--impl", "--force")  # bench() writes these itself
_TAIL = (5000, 2000)  # the characters of the command's stdout and stderr a cell shows


def why_not() -> str | None:
    """Why a ``gpu`` cell cannot run here, or None when it can."""
    import torch

    from learning import runtime

    if not torch.cuda.is_available():
        return "no CUDA GPU here"
    if runtime.interpreting():
        return "TRITON_INTERPRET=1 makes Triton interpret kernels on the CPU"
    return None


def on_gpu(doing: str) -> bool:
    """True when this machine can run the cell; otherwise print that the cell ``doing`` (what it
    would do, as "traces the block on the GPU") was skipped, and why, and return False."""
    reason = why_not()
    if reason is not None:
        print(f"{SKIPPED}{reason}: on a GPU it {doing}")
    return reason is None


def bench(name: str, *arguments: str, impl: str = "learner", show: bool = True) -> Path | None:
    """Run ``kernel-bench ARGUMENTS --impl IMPL --output results/local/NAME.json --force``.

    Returns the report's path, or None when the cell was skipped. With ``show`` the end of the
    benchmark's table is printed. A failed run raises an error after printing its output.
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name.endswith(".json"):
        raise ValueError(
            f"bench() needs a report name of letters, digits, '_', '.' and '-' without "
            f"'.json' (it writes {REPORTS}/NAME.json), not {name!r}"
        )
    if impl not in IMPLS:
        raise ValueError(f"bench() takes impl={' or '.join(map(repr, IMPLS))}, not {impl!r}")
    own = [argument for argument in arguments
           if str(argument).split("=", 1)[0] in _OWN_OPTIONS]  # fmt: skip
    if own:
        raise ValueError(
            f"bench() writes {', '.join(_OWN_OPTIONS)} itself; leave out {', '.join(own)}"
        )
    output = REPORTS / f"{name}.json"
    command = ["-m", "learning.bench", *map(str, arguments), "--impl", impl,
               "--output", str(output), "--force"]  # fmt: skip
    return REPO_ROOT / output if _run(command, show) else None


def script(name: str, *arguments: str, show: bool = True) -> None:
    """Run ``python scripts/NAME ARGUMENTS`` in the course folder (nothing when skipped)."""
    path = Path("scripts") / name
    if not (REPO_ROOT / path).is_file():
        raise ValueError(f"script() runs a file of the course's scripts/, and {path} is none")
    _run([str(path), *map(str, arguments)], show)


def shown(command: list[str]) -> str:
    """A command line as a learner types it in the course folder: this Python, then
    ``command``."""
    python = Path(sys.executable)
    try:
        python = python.relative_to(REPO_ROOT)  # .venv/bin/python, the README's spelling
    except ValueError:
        pass
    return shlex.join([str(python), *command])


def _run(command: list[str], show: bool) -> bool:
    line = shown(command)
    if not on_gpu(f"runs {line}"):
        return False
    (REPO_ROOT / REPORTS).mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, *command], cwd=REPO_ROOT, capture_output=True,
                          text=True)  # fmt: skip
    if show or done.returncode:
        print(done.stdout[-_TAIL[0]:] + done.stderr[-_TAIL[1]:])
    if done.returncode:
        raise RuntimeError(f"{line} exited with status {done.returncode} (its output is above)")
    return True
