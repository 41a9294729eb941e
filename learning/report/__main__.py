"""``python -m learning.report validate REPORT...``, ``... snapshot REPORT`` and
``... normalize REPORT...``.

validate: exit 0 when every report is valid, 2 otherwise (a file that is no report, or a
report that is not what it claims), with one line per problem; a file too large, too deeply
nested or not strict JSON is one line.
snapshot: preserve each fingerprinted source file under ``results/snapshots/`` and record it in
the report's ``source_snapshots``, so that editing the file later keeps the report valid;
``--from-git`` finds a file already edited in the commit history by its recorded hash. A
snapshot is data, not code: its bytes are the measured file's, under the name
``<sha256 prefix>-<file name>.txt``, so that no tool (ruff, pytest, an editor, a search for
duplicated code) reads an old version of a module as part of the course.
rederive: recompute the verdicts a report records (``paired_vs_eager``, ``paired_vs``) from its
own samples with today's ``learning.report.stats``, and rewrite the file with them when they
differ (nothing else changes: the samples, the fingerprint and the settings stay as measured);
exit 1 when a report is unreadable or invalid afterwards. For a change to how intervals or
verdicts are derived: the validator re-derives them, so the recorded reports follow at once.
normalize: give a report (or script record) made without ``fingerprint.normalized`` the
normalised hash of every file, computed from the content it measured (its snapshot, the file
while unchanged, or the commit whose content has the recorded sha256); exit 1 when a file's
measured content is gone (that file stays compared by its sha256).
stale: for each card's recorded sweeps (``results/<card>/``), the cases whose code has changed
since they were measured (``learning.report.binding``) and the cases the sweep's settings now
select that no file records, with the commands that re-record exactly those, grouped into GPU
calls that fit (``learning.report.sweeps``); exit 0 when every sweep is fresh, 1 otherwise.
``--card NAME`` plans a card that has no folder yet (every sweep recorded whole).
rerecord OUTDIR: on a GPU, run the first call of that plan for the GPU found (or the sweeps
named by ``--sweep``), each sweep's report and log into OUTDIR.
adopt OUTDIR: move the reports of OUTDIR into their card's folder (from the GPU name each
records): a sweep's first report as ``<sweep>.json``, a later one as a part beside it,
``<sweep>.part-<time>.json``, never over a file; each is validated first and snapshotted.
"""

from __future__ import annotations

import argparse
import json
import re
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
    return 2 if invalid else 0


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


def _rederive(paths: list[Path], repo_root: Path = REPO_ROOT) -> int:
    from learning.report.validate import UnreadableReport, read_report
    from learning.report.verdicts import verdicts

    status = 0
    for path in paths:
        try:
            report = read_report(path)
        except UnreadableReport as error:
            print(f"{path}: {error}", file=sys.stderr)
            status = 1
            continue
        if not isinstance(report, dict) or "cases" not in report:
            print(f"{path}: not a kernel-bench report (a script's record?); nothing to rederive")
            continue
        settings, cases = report.get("settings") or {}, report["cases"]
        if "margin" not in settings:  # recorded before reports carried verdicts
            print(f"{path}: records no verdicts; nothing to rederive")
            continue
        changed = 0
        for case in cases:
            for variant in case["variants"]:
                for key, value in verdicts(case, settings)[variant["name"]].items():
                    if variant.get(key, "absent") != value:
                        variant[key], changed = value, changed + 1
        if changed:
            write_atomic(report, path)
        problems = validate_file(path, repo_root)
        for problem in problems:
            print(f"{path}: {problem}", file=sys.stderr)
        status = 1 if problems else status
        print(f"{path}: {changed} verdicts rederived" if changed else f"{path}: unchanged")
    return status


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


def _selected(report: dict) -> list[str] | None:
    """The case keys a sweep's recorded settings select with today's registry (None when the
    settings cannot be read back, or the ops are gone)."""
    from learning.bench.config import BenchConfig, BenchInputError, case_key, select

    settings = report.get("settings") or {}
    try:
        given = settings.get("shapes")
        shapes = tuple(tuple(shape) for shape in given) if given else None
        config = BenchConfig(
            op=settings["op"], output=Path("unused.json"), shapes=shapes,
            dtype=settings.get("dtype"), impl=settings.get("impl", "reference"),
            suite=settings.get("suite"), suite_seed=settings.get("suite_seed"),
        )  # fmt: skip
        return [case_key(s.name, shape, dtype) for s, shape, dtype in select(config, "cuda")]
    except (KeyError, TypeError, ValueError, BenchInputError):
        return None


def _states(folder: Path, names: list[str]) -> list:
    from learning.report import sweeps

    states = []
    for name in names:
        sweep = sweeps.load_sweep(folder, name)
        bench = sweep.base is not None and not sweeps.SWEEPS[name].script
        selected = _selected(sweep.base) if bench else None
        states.append(sweeps.sweep_state(folder, name, REPO_ROOT, selected))
    return states


def _describe(state) -> list[str]:
    where = state.folder.relative_to(REPO_ROOT) if state.folder.is_relative_to(REPO_ROOT) \
        else state.folder  # fmt: skip
    if state.fresh:
        return [f"{where}/{state.name}: fresh ({state.recorded} cases)"]
    if state.whole and not state.recorded:
        return [f"{where}/{state.name}: to be recorded whole (~{state.seconds:.0f} s)"]
    if state.whole:
        return [f"{where}/{state.name}: every case stale: re-record it whole "
                f"(~{state.seconds:.0f} s)"]  # fmt: skip
    lines = [f"{where}/{state.name}: {len(state.stale)} of {state.recorded} cases stale or "
             f"missing (~{state.seconds:.0f} s)"]  # fmt: skip
    for case in state.stale:
        why = "not recorded yet" if case.why is None else case.why.reasons[0]
        lines.append(f"  {case.key}: {why}")
    return lines


def _plan_text(calls: list, outdir: str, card: str) -> list[str]:
    lines = []
    for number, call in enumerate(calls, 1):
        total = sum(state.seconds for state in call)
        names = " ".join(f"--sweep {state.name}" for state in call)
        lines.append(f"GPU call {number} of {len(calls)} (~{total:.0f} s): python3 -m "
                     f"learning.report rerecord {outdir} --card {card} {names}")  # fmt: skip
        for state in call:
            lines.append("  " + " ".join(state.command(outdir)))
    if calls:
        lines.append(f"then: python -m learning.report adopt {outdir}")
    return lines


def _stale(folders: list[Path], cards: list[str], names: list[str]) -> int:
    from learning.report import sweeps

    chosen = [*folders, *(REPO_ROOT / sweeps.RESULTS / card for card in cards)]
    chosen = chosen or sweeps.card_folders(REPO_ROOT)
    anything = False
    for folder in chosen:
        states = _states(folder, names)
        for state in states:
            print("\n".join(_describe(state)))
        calls = sweeps.plan(states)
        anything |= bool(calls)
        for line in _plan_text(calls, "OUTDIR", folder.name):
            print(line)
    return 1 if anything else 0


def _rerecord(outdir: Path, card: str | None, names: list[str], budget: float, dry: bool) -> int:
    import subprocess
    import time

    from learning.report import sweeps

    if card is None:
        try:
            import torch
        except ImportError:
            torch = None
        if torch is None or not torch.cuda.is_available():
            print("rerecord: no CUDA GPU here; name the card with --card to see the plan",
                  file=sys.stderr)  # fmt: skip
            return 2
        card = sweeps.card_folder(torch.cuda.get_device_name())
    folder = REPO_ROOT / sweeps.RESULTS / card
    states = _states(folder, names or list(sweeps.SWEEPS))
    calls = sweeps.plan(states, budget)
    if not calls:
        print(f"rerecord: every sweep of {card} is fresh")
        return 0
    call = calls[0] if not names else [s for c in calls for s in c]
    for line in _plan_text([call], str(outdir), card):
        print(line)
    if len(calls) > 1 and not names:
        print(f"rerecord: {len(calls) - 1} more call(s) after this one: run "
              f"python -m learning.report stale --card {card}")  # fmt: skip
    if dry:
        return 0
    outdir.mkdir(parents=True, exist_ok=True)
    failed = 0
    for state in call:
        command = [sys.executable, *state.command(str(outdir))[1:]]
        start = time.monotonic()
        with open(outdir / f"{state.name}.log", "w") as log:
            code = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT,
                                  cwd=REPO_ROOT).returncode  # fmt: skip
        failed += code != 0
        print(f"{state.name}: exit {code} in {time.monotonic() - start:.0f} s "
              f"(estimated {state.seconds:.0f} s)")  # fmt: skip
    return 1 if failed else 0


def _adopt(outdir: Path) -> int:
    import shutil

    from learning.report import sweeps

    status = 0
    for path in sorted(outdir.glob("*.json")):
        name = path.stem
        if name not in sweeps.SWEEPS:
            print(f"{path}: not a sweep ({', '.join(sweeps.SWEEPS)}); left where it is")
            continue
        try:
            report = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            print(f"{path}: cannot read a report: {error}", file=sys.stderr)
            status = 1
            continue
        gpu = (report.get("environment") or {}).get("gpu_name") \
            or ((report.get("data") or {}).get("environment") or {}).get("gpu")  # fmt: skip
        if not gpu:
            print(f"{path}: records no GPU name; not a GPU recording", file=sys.stderr)
            status = 1
            continue
        folder = REPO_ROOT / sweeps.RESULTS / sweeps.card_folder(gpu)
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{name}.json"
        if target.exists():
            stamp = re.sub(r"[^0-9T]", "", (report.get("started_at")
                                           or report.get("recorded_at") or ""))[:13]  # fmt: skip
            target = folder / f"{name}.part-{stamp or 'unknown'}.json"
        if target.exists():
            print(f"{path}: {target} exists; nothing moved", file=sys.stderr)
            status = 1
            continue
        shutil.copyfile(path, target)
        log = path.with_suffix(".log")
        if log.is_file() and not target.with_suffix(".log").exists():
            shutil.copyfile(log, target.with_suffix(".log"))
        code = _snapshot(target)
        problems = validate_file(target, REPO_ROOT)
        for problem in problems:
            print(f"{target}: {problem}", file=sys.stderr)
        status = 1 if code or problems else status
        print(f"{path} -> {target.relative_to(REPO_ROOT)}")
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
    derive = commands.add_parser(
        "rederive", help="recompute the verdicts a report records from its own samples"
    )
    derive.add_argument("reports", nargs="+", type=Path)
    normal = commands.add_parser(
        "normalize", help="add the normalised hashes, from the content each report measured"
    )
    normal.add_argument("reports", nargs="+", type=Path)
    stale = commands.add_parser("stale", help="the stale cases of the recorded sweeps")
    stale.add_argument("folders", nargs="*", type=Path, help="card folders (default: all)")
    stale.add_argument("--card", action="append", default=[],
                       help="plan a card by name (h100, h200), folder or not")  # fmt: skip
    stale.add_argument("--sweep", action="append", default=[], help="only this sweep")
    again = commands.add_parser("rerecord", help="on a GPU: re-record what is stale")
    again.add_argument("outdir", type=Path)
    again.add_argument("--card", help="the card's folder name (default: the GPU's model)")
    again.add_argument("--sweep", action="append", default=[], help="only this sweep")
    again.add_argument("--budget-s", type=float, default=None,
                       help="kernel-bench seconds one call may take (default 480)")  # fmt: skip
    again.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    adopt = commands.add_parser("adopt", help="move re-recorded sweeps into their card folder")
    adopt.add_argument("outdir", type=Path)
    args = parser.parse_args(argv)
    if args.command in ("stale", "rerecord"):
        from learning.report import sweeps

        unknown = [name for name in args.sweep if name not in sweeps.SWEEPS]
        if unknown:
            parser.error(f"unknown sweep {unknown[0]!r}; choose from {', '.join(sweeps.SWEEPS)}")
        names = args.sweep or list(sweeps.SWEEPS)
        if args.command == "stale":
            return _stale(args.folders, args.card, names)
        budget = args.budget_s if args.budget_s is not None else sweeps.CALL_BUDGET_S
        return _rerecord(args.outdir, args.card, args.sweep, budget, args.dry_run)
    if args.command == "adopt":
        if not args.outdir.is_dir():
            parser.error(f"{args.outdir} is not a folder")
        return _adopt(args.outdir)
    if args.command == "validate":
        return _validate(args.reports)
    if args.command == "normalize":
        return _normalize(args.reports)
    if args.command == "rederive":
        return _rederive(args.reports)
    return _snapshot(args.report, args.from_git)


if __name__ == "__main__":
    sys.exit(main())
