"""SHA-256 of files, remembered per (path, mtime, size) so a class's reports hash each file once.

A thousand reports fingerprint the same few dozen engine files; the grader asks for each of
them once per report. :class:`HashCache` answers repeated questions from memory and re-reads a
file only when its modification time or size changed.
"""

from __future__ import annotations

import os
import stat as stat_module
from pathlib import Path

from learning.report.fingerprint import sha256_file


class HashCache:
    """``digest(path)`` -> the file's SHA-256 hex digest, or None when it is not a file."""

    def __init__(self) -> None:
        self._digests: dict[str, tuple[int, int, str]] = {}

    def digest(self, path: Path | str) -> str | None:
        key = os.fspath(path)
        try:
            stat = os.stat(key)
        except OSError:
            return None
        if not stat_module.S_ISREG(stat.st_mode):
            return None
        remembered = self._digests.get(key)
        if remembered and remembered[0] == stat.st_mtime_ns and remembered[1] == stat.st_size:
            return remembered[2]
        digest = sha256_file(Path(key))
        self._digests[key] = (stat.st_mtime_ns, stat.st_size, digest)
        return digest
