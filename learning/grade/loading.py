"""Reading a submitted report without letting it stop the class: limits before ``json.loads``.

A report is a file a learner wrote, so it can be anything: 200 MB of samples, 100,000 nested
arrays (which make Python's JSON parser raise ``RecursionError``), a device file. Each of these
must become one finding for that learner, never a crash of the grader or a gigabyte of memory.
So, in this order:

1. the size, from ``stat``, before anything is read: above :data:`MAX_REPORT_BYTES` the file is
   not read at all (a genuine report of the course's largest sweep is about 0.8 MB);
2. the nesting depth, counted on the raw bytes (strings removed first, so a bracket inside a
   string does not count): above :data:`MAX_NESTING` the file is not parsed (a genuine report
   nests 6 levels deep);
3. ``json.loads``, with ``RecursionError`` and ``MemoryError`` caught as well.
"""

from __future__ import annotations

import json
import os
import re
import stat as stat_module
from pathlib import Path

import numpy as np

from learning.grade.findings import Finding
from learning.report.validate import MAX_NESTING, MAX_REPORT_BYTES  # the validator's limits

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_OPEN, _CLOSE = np.frombuffer(b"[{", dtype=np.uint8), np.frombuffer(b"]}", dtype=np.uint8)


def nesting_depth(data: bytes) -> int:
    """The deepest nesting of ``[`` and ``{`` in a JSON text (brackets in strings ignored)."""
    stripped = np.frombuffer(_STRING.sub(b'""', data), dtype=np.uint8)
    steps = np.isin(stripped, _OPEN).astype(np.int32) - np.isin(stripped, _CLOSE)
    return int(steps.cumsum().max(initial=0))


def read_limited(path: Path, what: str = "report") -> tuple[bytes | None, Finding | None]:
    """The file's bytes, or a finding when it is not a regular file or is over the size limit."""
    try:
        info = os.stat(path)
    except OSError as error:
        return None, Finding("unreadable", f"cannot read the {what}: {error.strerror}")
    if not stat_module.S_ISREG(info.st_mode):
        return None, Finding("unreadable", f"the {what} is not a regular file")
    if info.st_size > MAX_REPORT_BYTES:
        return None, Finding(
            "unreadable",
            f"the {what} is {info.st_size / 1e6:.1f} MB, above the grader's limit of "
            f"{MAX_REPORT_BYTES / 1e6:g} MB; kernel-bench reports are far smaller",
        )
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_REPORT_BYTES + 1)
    except OSError as error:
        return None, Finding("unreadable", f"cannot read the {what}: {error.strerror}")
    if len(data) > MAX_REPORT_BYTES:  # it grew between the stat and the read
        return None, Finding("unreadable", f"the {what} is above the grader's size limit")
    return data, None


def parse_limited(data: bytes, what: str = "report") -> tuple[object, Finding | None]:
    """``json.loads`` of ``data`` after the depth check; errors become one finding."""
    try:
        depth = nesting_depth(data)
    except MemoryError:
        return None, Finding("unreadable", f"the {what} is too large to read")
    if depth > MAX_NESTING:
        return None, Finding(
            "unreadable",
            f"the {what} nests {depth} levels deep, above the grader's limit of {MAX_NESTING} "
            "(a kernel-bench report nests 6)",
        )
    try:
        return json.loads(data.decode("utf-8")), None
    except (UnicodeDecodeError, ValueError) as error:
        return None, Finding("unreadable", f"not a readable JSON {what}: {error}")
    except (RecursionError, MemoryError) as error:
        return None, Finding(
            "unreadable", f"the {what} could not be parsed ({type(error).__name__})"
        )


def load_report(path: Path) -> tuple[object, list[Finding]]:
    """A report file as JSON, or ``(None, [one finding])``; never raises for a bad file."""
    data, problem = read_limited(Path(path))
    if problem is not None:
        return None, [problem]
    report, problem = parse_limited(data)
    return (None, [problem]) if problem is not None else (report, [])
