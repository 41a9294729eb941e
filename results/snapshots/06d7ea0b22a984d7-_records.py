"""How a measurement script writes its ``--output``: as a script record (``learning.report``).

The script's own output becomes the record's ``data``, unchanged in structure; the envelope adds
the SHA-256 of every source file the script executed, so ``python -m learning.report validate``
can tell whether the recorded output still describes the repository's code. The record is
written once the measurement has finished, atomically: a failed run leaves no half-written file,
and an existing file is replaced only by a complete one.

Standard library only at import time (``learning`` is imported when a record is written), so a
script that must not import the course's engine up front can still use it.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def finite(value):
    """JSON has no NaN or Infinity: a non-finite float becomes None (null)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    return value


def environment() -> dict:
    """What a correctness script ran on: the Triton backend, Python, torch and Triton versions,
    and on CUDA the GPU, its SM count and the CUDA version (imports torch when called)."""
    import platform

    import torch
    import triton

    from learning.runtime import backend

    info = {
        "backend": backend(), "python": platform.python_version(),
        "torch": torch.__version__, "triton": triton.__version__,
    }  # fmt: skip
    if backend() == "cuda":
        properties = torch.cuda.get_device_properties(0)
        info.update(gpu=properties.name, sm_count=properties.multi_processor_count,
                    cuda=torch.version.cuda)  # fmt: skip
    return info


def _print(text: str) -> None:
    print(text, flush=True)


def json_data(value) -> object:
    """``value`` as the JSON it would have been written as: what is not JSON (a Path, a dtype)
    becomes its ``str``, tuples become lists, and a non-finite float becomes null."""
    return finite(json.loads(json.dumps(value, default=str)))


def write_output(
    path: str | Path,
    script: str | Path,
    data: object,
    *,
    argv: Sequence[str] | None = None,
    extra_files: Iterable[str | Path] = (),
    say: Callable[[str], object] | None = None,
) -> Path:
    """Write ``data`` (the script's output) to ``path`` as a record of ``script``; say so.

    ``argv`` is the script's arguments (default ``sys.argv[1:]``); ``extra_files`` are sources
    it ran that are not Python modules (absolute paths), fingerprinted with the modules; ``say``
    prints the closing line (default ``print``)."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from learning.report import write_record

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    written = write_record(
        path,
        script=script,
        data=json_data(data),
        argv=None if argv is None else list(argv),
        extra_files=[Path(name) for name in extra_files],
    )
    (say or _print)(f"wrote {path}")
    return written
