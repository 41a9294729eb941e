"""The hand-in archive: what ``python -m learning handin`` writes and the grader unpacks.

One zip (or ``.tar.gz``) per learner, laid out as a learner's submission folder::

    MANIFEST.json      what was packed: every file's SHA-256, and which reports were left out
    exercises/...      the learner's whole exercises/ folder
    journals/...       their journals, when they have any
    reports/*.json     their own kernel-bench reports (learner runs only)

The grader takes ``SUBMISSIONS_DIR/<learner>.zip`` (or ``.tar.gz``) as the folder
``SUBMISSIONS_DIR/<learner>/``. Unpacking is defensive, because an archive is a file the
learner made: no absolute paths, no ``..``, no links or devices, nothing outside the three
folders and the manifest, at most :data:`MAX_MEMBERS` files and :data:`MAX_UNPACKED_BYTES`
bytes. A bad archive is one finding for that learner (code ``archive``), never an error for
the class.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import stat as stat_module
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from learning.grade.findings import Finding

MANIFEST_NAME = "MANIFEST.json"
MANIFEST_FORMAT = "kernel-workshop-handin"
PARTS = ("exercises", "journals", "reports")
SUFFIXES = (".zip", ".tar.gz", ".tgz")
MAX_MEMBERS = 5000
MAX_UNPACKED_BYTES = 200 * 10**6


class ArchiveError(ValueError):
    """The archive cannot be unpacked safely; the message says why, in one line."""


def archive_learner(path: Path) -> str | None:
    """``alice.zip`` -> ``alice``; None when the file is not a hand-in archive."""
    name = path.name
    for suffix in SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return None


def member_path(name: str) -> PurePosixPath | None:
    """The member's path when it belongs in a submission; None for one to skip (a folder).
    Raises ArchiveError for a path that would leave the folder it is unpacked in."""
    pure = PurePosixPath(name)
    if pure.is_absolute() or "\\" in name or any(part == ".." for part in pure.parts):
        raise ArchiveError(f"member {name!r} would be written outside the submission")
    parts = [part for part in pure.parts if part != "."]
    if not parts:
        return None
    clean = PurePosixPath(*parts)
    if str(clean) == MANIFEST_NAME or parts[0] in PARTS:
        return clean
    raise ArchiveError(f"member {name!r} is not under {', '.join(PARTS)}/ or {MANIFEST_NAME}")


def _members(archive: Path):
    """``(path, size, reader)`` for every regular file in the archive; links refused."""
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as bundle:
            for info in bundle.infolist():
                if info.is_dir():
                    continue
                kind = stat_module.S_IFMT(info.external_attr >> 16)
                if kind not in (0, stat_module.S_IFREG):  # 0: a zip tool that records no type
                    raise ArchiveError(f"member {info.filename!r} is not a regular file")
                yield info.filename, info.file_size, lambda info=info: bundle.open(info)
        return
    with tarfile.open(archive, "r:gz") as bundle:
        for info in bundle:
            if info.isdir():
                continue
            if not info.isreg():
                raise ArchiveError(f"member {info.name!r} is not a regular file")
            yield info.name, info.size, lambda info=info: bundle.extractfile(info)


def _copy_limited(source, sink, size: int) -> int:
    """Copy at most ``size + 1`` bytes: enough to tell a member that lies about its size."""
    copied = 0
    while copied <= size:
        block = source.read(min(1 << 20, size + 1 - copied))
        if not block:
            break
        sink.write(block)
        copied += len(block)
    return copied


def unpack(archive: Path, destination: Path) -> list[Finding]:
    """Unpack ``archive`` into ``destination`` (created); findings about its manifest.

    Raises :class:`ArchiveError` when it cannot be unpacked safely; nothing of it is kept then.
    """
    destination.mkdir(parents=True)
    try:
        count, total = 0, 0
        for name, size, reader in _members(archive):
            path = member_path(name)
            if path is None:
                continue
            count, total = count + 1, total + size
            if count > MAX_MEMBERS or total > MAX_UNPACKED_BYTES:
                raise ArchiveError(
                    f"more than {MAX_MEMBERS} files or {MAX_UNPACKED_BYTES / 1e6:g} MB unpacked"
                )
            target = destination / path
            if target.exists():
                raise ArchiveError(f"member {name!r} appears twice")
            target.parent.mkdir(parents=True, exist_ok=True)
            with reader() as source, open(target, "wb") as sink:
                if _copy_limited(source, sink, size) > size:
                    raise ArchiveError(f"member {name!r} is larger than the archive says")
    except ArchiveError:
        shutil.rmtree(destination, ignore_errors=True)
        raise
    except (OSError, zipfile.BadZipFile, tarfile.TarError, EOFError, ValueError) as error:
        shutil.rmtree(destination, ignore_errors=True)
        raise ArchiveError(f"not a readable archive: {error}") from None
    return manifest_findings(destination)


def submission_files(folder: Path, parts: tuple[str, ...] = PARTS) -> dict[str, Path]:
    """``{path under folder: file}`` for every file of ``parts`` (compiled Python left out)."""
    files = {}
    for part in parts:
        top = folder / part
        if not top.is_dir():
            continue
        for path in sorted(top.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                files[path.relative_to(folder).as_posix()] = path
    return files


def file_digests(folder: Path) -> dict[str, str]:
    """``{path: sha256}`` of every file under ``folder``'s submission parts."""
    return {
        name: hashlib.sha256(path.read_bytes()).hexdigest()
        for name, path in submission_files(folder).items()
    }


def manifest_findings(folder: Path) -> list[Finding]:
    """Does the unpacked archive hold what its manifest says was packed?"""
    path = folder / MANIFEST_NAME
    if not path.is_file():
        return [
            Finding(
                "archive",
                f"the archive has no {MANIFEST_NAME}: it was not made by python -m learning handin",
                review=True,
            )
        ]
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        listed = dict(manifest["files"])
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return [Finding("archive", f"its {MANIFEST_NAME} is not readable", review=True)]
    found = file_digests(folder)
    changed = sorted(p for p in set(listed) | set(found) if listed.get(p) != found.get(p))
    if changed:
        return [
            Finding(
                "archive",
                f"files differ from its {MANIFEST_NAME} (edited after it was packed): "
                f"{', '.join(changed[:5])}{' ...' if len(changed) > 5 else ''}",
                review=True,
            )
        ]
    return []
