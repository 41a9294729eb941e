"""Benchmark reports, schema version 2: writing, fingerprinting, snapshots and validation.

A report is one JSON object (see ``learning/schemas/report-v2.json``). This package is the one
place that knows the format; ``kernel-bench`` writes reports through it, and the command line
(``python -m learning.report validate|snapshot``) and the grader read them through it::

    problems = learning.report.validate(json.load(open(path)))   # [] when valid

The companion measurement scripts write *script records* (``learning.report.records``): their
own output inside an envelope with the same fingerprint and snapshots, checked by the same
``validate``.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from learning.report.fingerprint import (
    REPO_ROOT,
    SCHEMA_PATH,
    create_snapshots,
    engine_files,
    fingerprint,
    fingerprint_record,
    implementation_files,
    normalized_from_measured,
)
from learning.report.records import is_record, load_data, make_record, write_record
from learning.report.validate import (
    SCHEMA_VERSION,
    consistency_problems,
    fingerprint_problems,
    load_schema,
    schema_problems,
    validate,
    validate_file,
)

__all__ = [
    "REPO_ROOT",
    "SCHEMA_PATH",
    "SCHEMA_VERSION",
    "consistency_problems",
    "create_snapshots",
    "engine_files",
    "fingerprint",
    "fingerprint_problems",
    "fingerprint_record",
    "implementation_files",
    "is_record",
    "load_data",
    "compute_bound",
    "make_record",
    "load_schema",
    "normalized_from_measured",
    "schema_problems",
    "validate",
    "validate_file",
    "write_atomic",
    "write_record",
]


# A case doing more FLOPs a logical byte than this is read in TFLOP/s, any other in GB/s. The
# course's ops fall far to either side: about 1 for the row ops, 340 or more for its GEMMs and
# N / 2 (1024 and more) for attention; a Hopper card's ridge point is near 300.
COMPUTE_BOUND_FLOPS_PER_BYTE = 64


def compute_bound(case: dict) -> bool:
    """Whether a report's case is read in TFLOP/s: its FLOPs a logical byte pass
    :data:`COMPUTE_BOUND_FLOPS_PER_BYTE`."""
    flops, moved = case.get("flops") or 0, case.get("logical_bytes") or 0
    return moved > 0 and flops / moved > COMPUTE_BOUND_FLOPS_PER_BYTE


def write_atomic(report: dict, path: Path) -> Path:
    """Write ``report`` as JSON to ``path`` all at once: a temporary file, then a rename.

    A reader (or a crash) never sees half a report, and an existing file is replaced only by a
    complete new one.
    """
    path = Path(path)
    text = json.dumps(report, indent=1, allow_nan=False) + "\n"
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
