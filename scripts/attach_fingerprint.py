"""Wrap an older script output in a fingerprinted record, from the commit its run received.

    python scripts/attach_fingerprint.py results/h200/stability.json --commit 3fbd79a \\
        --script scripts/benchmark_stability.py --argv "--sweeps 3" \\
        --files learning/ops/softmax/__init__.py reference/kernels/softmax.py ...

Measurement scripts now write script records themselves (``learning.report.records``). Outputs
recorded before that carry no fingerprint, so nothing ties their figures to code. When the
working tree a run received is known to equal a commit for every file the run executed, this
tool attaches the hashes of those files *at that commit*, preserves each of them under
``results/snapshots/`` (from git, by content hash), and says so in the record's
``fingerprint_note``. It does not help when the measured tree matches no commit: such
an output has to be measured again, unless the few files that differ from the commit can be
given exactly (``--measured PATH=FILE``, explained in ``--note``): for instance when the edits
made after the run were plain text replacements that can be undone and redone byte for byte.

Exit 2 with one line for bad input; the output file is replaced only by the complete record.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from learning.report import is_record, validate, write_atomic  # noqa: E402
from learning.report.fingerprint import snapshot_name  # noqa: E402
from learning.report.records import RECORD_KIND, RECORD_VERSION  # noqa: E402


def _git_blob(commit: str, path: str) -> bytes:
    result = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "show", f"{commit}:{path}"], capture_output=True
    )
    if result.returncode != 0:
        raise ValueError(f"{path} is not in commit {commit}")
    return result.stdout


def attach(
    output: Path,
    commit: str,
    script: str,
    files: list[str],
    argv: list[str],
    recorded_at: str,
    measured: dict[str, Path] | None = None,
    note: str = "",
) -> dict:
    data = json.loads(output.read_text())
    if is_record(data):
        raise ValueError(f"{output} is already a script record")
    hashes, snapshots = {}, {}
    for path in sorted({script, *files}):
        blob = measured[path].read_bytes() if path in (measured or {}) else _git_blob(commit, path)
        digest = hashlib.sha256(blob).hexdigest()
        hashes[path] = digest
        # Every file is preserved (as `learning.report snapshot` does for a report), so the
        # record stays valid whatever is edited later.
        name = snapshot_name(path, digest)
        target = REPO_ROOT / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.write_bytes(blob)
        snapshots[path] = name
    return {
        "record": RECORD_KIND,
        "record_version": RECORD_VERSION,
        "script": script,
        "argv": argv,
        "recorded_at": recorded_at,
        "fingerprint": {"algorithm": "sha256", "files": hashes},
        "source_snapshots": snapshots,
        "fingerprint_note": (
            f"attached after the run from commit {commit}: every file listed here was identical "
            "in the working tree the run received; the script did not yet write fingerprints"
            + (f". {note}" if note else "")
        ),
        "data": data,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", type=Path)
    parser.add_argument("--commit", required=True)
    parser.add_argument("--script", required=True, help="repository-relative path")
    parser.add_argument("--files", nargs="+", required=True, help="files the run executed")
    parser.add_argument("--argv", default="", help="the script's arguments, as typed")
    parser.add_argument("--recorded-at", required=True, help="the run's date (ISO 8601)")
    parser.add_argument(
        "--measured", nargs="*", default=[], metavar="PATH=FILE",
        help="a file whose measured content is FILE, not the commit's (say why in --note)",
    )  # fmt: skip
    parser.add_argument("--note", default="", help="appended to the fingerprint note")
    args = parser.parse_args(argv)
    measured = {}
    for item in args.measured:
        path, _, local = item.partition("=")
        if not local or not Path(local).is_file():
            print(f"attach_fingerprint: --measured wants PATH=FILE, got {item!r}", file=sys.stderr)
            return 2
        measured[path] = Path(local)
    if measured and not args.note:
        print("attach_fingerprint: --measured needs a --note saying where FILE came from",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        record = attach(
            args.output, args.commit, args.script, args.files, shlex.split(args.argv),
            args.recorded_at, measured, args.note,
        )  # fmt: skip
    except (OSError, ValueError) as error:
        print(f"attach_fingerprint: {error}", file=sys.stderr)
        return 2
    problems = validate(record, REPO_ROOT)
    if problems:
        print(f"attach_fingerprint: the record would not validate: {problems[0]}", file=sys.stderr)
        return 2
    write_atomic(record, args.output)
    print(f"{args.output}: {len(record['fingerprint']['files'])} files from {args.commit}, "
          f"{len(record['source_snapshots'])} preserved as snapshots")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
