"""``python -m learning.report validate REPORT...``, ``... snapshot REPORT`` and
``... normalize REPORT...``.

validate: exit 0 when every report is valid, 1 otherwise, with one line per problem.
snapshot: preserve each fingerprinted source file under ``results/snapshots/`` and record it in
the report's ``source_snapshots``, so that editing the file later keeps the report valid;
``--from-git`` finds a file already edited in the commit history by its recorded hash. A
snapshot is data, not code: its bytes are the measured file's, under the name
``<sha256 prefix>-<file name>.txt``, so that no tool (ruff, pytest, an editor, a search for
duplicated code) reads an old version of a module as part of the course.
normalize: give a report (or script record) made without ``fingerprint.normalized`` the
normalised hash of every file, computed from the content it measured (its snapshot, the file
while unchanged, or the commit whose content has the recorded sha256); exit 1 when a file's
measured content is gone (that file stays compared by its sha256).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from learning.report import (
    REPO_ROOT,
    create_snapshots,
    normalized_from_measured,
    validate_file,
    write_atomic,
)
from learning.report.fingerprint import snapshot_name

DATA_SUFFIX = ".txt"  # what a snapshot's name ends with (``scripts/x.py`` -> ``<hash>-x.py.txt``)


def _validate(paths: list[Path]) -> int:
    invalid = 0
    for path in paths:
        problems = validate_file(path, REPO_ROOT)
        if problems:
            invalid += 1
            for problem in problems:
                print(f"{path}: {problem}")
        else:
            print(f"{path}: valid")
    return 1 if invalid else 0


def preserve_as_data(
    report: dict,
    repo_root: Path = REPO_ROOT,
    paths: list[str] | None = None,
    from_git: bool = False,
) -> tuple[dict[str, str], list[str]]:
    """``create_snapshots``, with each new snapshot stored under its data name (the copy's
    name and :data:`DATA_SUFFIX`): the report's new ``source_snapshots`` and the problems."""
    before = report.get("source_snapshots") or {}
    recorded = report.get("fingerprint", {}).get("files", {})
    # a copy under the code name that is already there may be another report's: left alone
    kept = {
        name for path, digest in recorded.items()
        if (repo_root / (name := snapshot_name(path, digest))).exists()
    }  # fmt: skip
    snapshots, problems = create_snapshots(report, repo_root, paths, from_git)
    for path, name in snapshots.items():
        if before.get(path) == name or name.endswith(DATA_SUFFIX):
            continue
        copy, data = repo_root / name, repo_root / (name + DATA_SUFFIX)
        if not data.exists():  # else preserved before, for another report: the same bytes
            data.write_bytes(copy.read_bytes())
        if name not in kept:
            copy.unlink()
        snapshots[path] = name + DATA_SUFFIX
    return snapshots, problems


def _snapshot(path: Path, from_git: bool = False, repo_root: Path = REPO_ROOT) -> int:
    try:
        report = json.loads(path.read_text())
        files = report["fingerprint"]["files"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(f"{path}: cannot read a report's fingerprint: {error}", file=sys.stderr)
        return 1
    snapshots, problems = preserve_as_data(report, repo_root, from_git=from_git)
    report["source_snapshots"] = snapshots
    write_atomic(report, path)
    for problem in problems:
        print(f"{path}: {problem}", file=sys.stderr)
    print(
        f"{path}: {len(snapshots)} of {len(files)} source files preserved under results/snapshots/"
    )
    return 1 if problems else 0


def _normalize(paths: list[Path], repo_root: Path = REPO_ROOT) -> int:
    status = 0
    for path in paths:
        try:
            report = json.loads(path.read_text())
            files = report["fingerprint"]["files"]
            if not isinstance(files, dict):
                raise TypeError("fingerprint.files is not an object")
        except (OSError, ValueError, KeyError, TypeError) as error:
            print(f"{path}: cannot read a report's fingerprint: {error}", file=sys.stderr)
            status = 1
            continue
        normalized, problems = normalized_from_measured(report, repo_root)
        for problem in problems:
            print(f"{path}: {problem}", file=sys.stderr)
        status = 1 if problems else status
        if report["fingerprint"].get("normalized") != normalized:
            report["fingerprint"]["normalized"] = normalized
            write_atomic(report, path)
        print(f"{path}: {len(normalized)} of {len(files)} files have a normalised hash")
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m learning.report", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("validate", help="check reports: schema, fingerprints, figures")
    check.add_argument("reports", nargs="+", type=Path)
    keep = commands.add_parser("snapshot", help="preserve the source files a report measured")
    keep.add_argument("report", type=Path)
    keep.add_argument(
        "--from-git", action="store_true",
        help="take a file changed since the run from the commit whose content has its hash",
    )  # fmt: skip
    normal = commands.add_parser(
        "normalize", help="add the normalised hashes, from the content each report measured"
    )
    normal.add_argument("reports", nargs="+", type=Path)
    args = parser.parse_args(argv)
    if args.command == "validate":
        return _validate(args.reports)
    if args.command == "normalize":
        return _normalize(args.reports)
    return _snapshot(args.report, args.from_git)


if __name__ == "__main__":
    sys.exit(main())
