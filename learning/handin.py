"""``python -m learning handin``: pack what you hand in into one archive, ready to submit.

The archive holds your ``exercises/`` and ``journals/`` folders and your own benchmark reports,
with a manifest (``MANIFEST.json``) listing every file's SHA-256, laid out as the grader reads a
submission (:mod:`learning.grade.archive`). Your own reports are the kernel-bench reports under
``results/local/`` that timed YOUR kernel: ``--impl learner`` runs, whose fingerprint names your
``exercises/`` files. A reference run (``make course`` and lesson 8 write some there) measures
the course's kernels, not yours, and would cost you report points, so it is left out, and the
command says which files it left out and why.

It refuses to overwrite an existing archive, and it warns about a report that measured an
older version of a file you have edited since: re-run that kernel-bench command before you
hand in, or the grader will find that the report does not describe your code.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import sys
import tempfile
import zipfile
from pathlib import Path

from learning.grade.archive import MANIFEST_FORMAT, MANIFEST_NAME, submission_files
from learning.grade.loading import load_report
from learning.report import REPO_ROOT

PROG = "python -m learning handin"
DEFAULT_OUTPUT = "handin.zip"
REPORTS_FOLDER = "results/local"
PACKED_FOLDERS = ("exercises", "journals")


class HandinError(ValueError):
    """Input the command cannot work with; the message is the one line it prints."""


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def report_verdict(path: Path) -> tuple[dict | None, str | None]:
    """The report when it is the learner's own; otherwise why it is left out."""
    report, problems = load_report(path)
    if problems:
        return None, problems[0].message
    if not isinstance(report, dict) or report.get("schema_version") != 2:
        return None, "not a kernel-bench report (schema version 2)"
    settings, fingerprint = report.get("settings"), report.get("fingerprint")
    if not isinstance(settings, dict) or not isinstance(fingerprint, dict):
        return None, "not a kernel-bench report (no settings or fingerprint)"
    if settings.get("impl") != "learner":
        return None, f"a --impl {settings.get('impl')} run: it measures the course's kernels"
    files = fingerprint.get("files")
    if not isinstance(files, dict) or not any(
        isinstance(name, str) and name.startswith("exercises/") for name in files
    ):
        return None, "its fingerprint names none of your exercises/ files"
    return report, None


def stale_files(report: dict, root: Path) -> list[str]:
    """The learner files the report measured that have changed (or gone) since."""
    stale = []
    for name, digest in report["fingerprint"]["files"].items():
        if not (isinstance(name, str) and name.startswith(PACKED_FOLDERS)):
            continue
        path = root / name
        if not path.is_file() or _digest(path) != digest:
            stale.append(name)
    return stale


def _archive_name(path: Path, folder: Path, taken: set[str]) -> str:
    stem = path.relative_to(folder).with_suffix("").as_posix().replace("/", "-")
    name, number = f"reports/{stem}.json", 2
    while name in taken:
        name, number = f"reports/{stem}-{number}.json", number + 1
    return name


def pack(root: Path, output: Path, reports_folder: Path, say=print) -> dict:
    """Write the archive at ``output`` (never over an existing file); return its manifest."""
    if not (root / "exercises").is_dir():
        raise HandinError(f"{root}: no exercises/ folder to hand in")
    if output.exists():
        raise HandinError(f"{output} exists; give another --output or move it away")
    parent = output.parent if str(output.parent) else Path(".")
    if not parent.is_dir():
        raise HandinError(f"--output {output}: folder {parent} does not exist")
    contents = submission_files(root, PACKED_FOLDERS)
    reports, skipped = {}, {}
    candidates = sorted(reports_folder.rglob("*.json")) if reports_folder.is_dir() else []
    for path in candidates:
        shown = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
        report, why = report_verdict(path)
        if why:
            skipped[shown] = why
            say(f"left out {shown}: {why}")
            continue
        name = _archive_name(path, reports_folder, set(reports))
        reports[name] = path
        stale = stale_files(report, root)
        if stale:
            say(
                f"warning: {shown} measured {', '.join(stale)} before your last edit; "
                "run its kernel-bench command again, or the grader will not trust it"
            )
    if not reports:
        say(f"warning: no report of your own kernels under {reports_folder}; the grader gives "
            "0 report points without one (.venv/bin/kernel-bench --impl learner ...)")  # fmt: skip
    members = {**contents, **reports}
    manifest = {
        "format": MANIFEST_FORMAT,
        "version": 1,
        "created_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "files": {name: _digest(path) for name, path in sorted(members.items())},
        "reports": {name: str(path) for name, path in sorted(reports.items())},
        "left_out": skipped,
    }
    _write_zip(output, members, manifest)
    return manifest


def _write_zip(output: Path, members: dict[str, Path], manifest: dict) -> None:
    """A temporary file in the same folder, then a hard link: an existing file is never
    replaced, even one that appears while the archive is written."""
    parent = output.parent if str(output.parent) else Path(".")
    handle, temporary = tempfile.mkstemp(prefix=f".{output.name}.", suffix=".tmp", dir=parent)
    os.close(handle)
    try:
        with zipfile.ZipFile(temporary, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
            bundle.writestr(MANIFEST_NAME, json.dumps(manifest, indent=1) + "\n")
            for name, path in sorted(members.items()):
                bundle.write(path, name)
        os.chmod(temporary, 0o644)
        try:
            os.link(temporary, output)
        except FileExistsError:
            raise HandinError(f"{output} exists; give another --output or move it away") from None
    finally:
        Path(temporary).unlink(missing_ok=True)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Pack exercises/, journals/ and your own kernel-bench reports (from "
        "results/local/) into one zip to hand in.",
    )
    p.add_argument(
        "--output",
        type=Path,
        default=Path(DEFAULT_OUTPUT),
        help=f"the archive to write (default {DEFAULT_OUTPUT}); never overwritten",
    )
    p.add_argument(
        "--reports",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"where your reports are (default: {REPORTS_FOLDER}/ of the course)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    root = REPO_ROOT
    reports_folder = args.reports if args.reports is not None else root / REPORTS_FOLDER
    try:
        manifest = pack(root, args.output, reports_folder)
    except HandinError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    count = len(manifest["files"])
    print(f"wrote {args.output}: {count} files, {len(manifest['reports'])} of your reports")
    return 0


if __name__ == "__main__":
    sys.exit(main())
