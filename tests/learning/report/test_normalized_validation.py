"""Is a report compared by what its files do: still valid after a comment or docstring is fixed,
stale after any change to the code, and given its normalised hashes only from what it measured?"""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from learning.report import __main__ as report_cli
from learning.report import create_snapshots, fingerprint_record, validate
from learning.report.fingerprint import REPO_ROOT, measured_source, normalized_from_measured
from learning.report.normalize import normalized_sha256

KERNEL = "reference/kernels/softmax.py"
SOURCE = '"""Softmax, the slow way."""\n\n\ndef softmax(x):\n    return x.softmax(-1)\n'
DOCSTRING_FIXED = SOURCE.replace("the slow way", "a reference") + "# a comment added later\n"
CODE_CHANGED = SOURCE.replace("(-1)", "(0)")


@pytest.fixture
def measured(tmp_path, cpu_run):
    """A valid report whose fingerprint is one kernel file of a scratch repository."""
    root = tmp_path / "repo"
    kernel = root / KERNEL
    kernel.parent.mkdir(parents=True)
    kernel.write_text(SOURCE)
    report = copy.deepcopy(cpu_run().data)
    report["fingerprint"] = fingerprint_record([kernel], root)
    hashes = report["fingerprint"]
    assert hashes["normalized"][KERNEL] == normalized_sha256(SOURCE.encode(), KERNEL)
    assert hashes["normalized"][KERNEL] != hashes["files"][KERNEL], "Python is hashed by tokens"
    assert validate(report, root) == []
    return root, kernel, report


def test_a_comment_or_docstring_fixed_after_the_run_keeps_the_report_valid(measured):
    root, kernel, report = measured
    kernel.write_text(DOCSTRING_FIXED)
    assert validate(report, root) == []


def test_a_code_change_after_the_run_makes_it_stale(measured):
    root, kernel, report = measured
    kernel.write_text(CODE_CHANGED)
    problems = validate(report, root)
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"{KERNEL}: changed since the run in more than comments")


def test_a_report_without_normalised_hashes_is_compared_by_its_bytes(measured):
    """Reports made before ``normalized`` existed keep the strict comparison."""
    root, kernel, report = measured
    del report["fingerprint"]["normalized"]
    assert validate(report, root) == []
    kernel.write_text(DOCSTRING_FIXED)
    problems = validate(report, root)
    assert len(problems) == 1 and "changed since the run (recorded sha256" in problems[0]


def test_a_normalised_hash_that_is_not_the_measured_sources_is_caught(measured):
    """Raw hash right, normalised hash altered: with the file unchanged, and with a snapshot."""
    root, kernel, report = measured
    report["fingerprint"]["normalized"][KERNEL] = normalized_sha256(CODE_CHANGED.encode(), KERNEL)
    problems = validate(report, root)
    assert len(problems) == 1 and "the report was altered" in problems[0], problems
    report["source_snapshots"], _ = create_snapshots(report, root)
    kernel.write_text(CODE_CHANGED)  # the snapshot, not the file, is what gets compared now
    problems = validate(report, root)
    assert len(problems) == 1 and "is not that of its snapshot" in problems[0], problems


def test_a_normalised_hash_must_belong_to_a_fingerprinted_file(measured):
    root, _, report = measured
    report["fingerprint"]["normalized"]["learning/other.py"] = "0" * 64
    assert validate(report, root) == [
        "learning/other.py: has a normalised hash but is not in the fingerprint"
    ]


def test_a_normalised_hash_of_the_wrong_form_is_a_schema_problem(measured):
    root, _, report = measured
    report["fingerprint"]["normalized"][KERNEL] = "not a hash"
    problems = validate(report, root)
    assert problems and all(p.startswith("schema: fingerprint/normalized") for p in problems)


# --------------------------------------------------------------------------- the measured source


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


@pytest.fixture
def history(measured):
    """The scratch repository with the measured kernel committed, then its code changed."""
    root, kernel, report = measured
    _git(root.parent, "init", "-q", str(root))
    _git(root, "config", "user.email", "t@example.invalid")
    _git(root, "config", "user.name", "t")
    _git(root, "add", KERNEL)
    _git(root, "commit", "-qm", "measured")
    kernel.write_text(CODE_CHANGED)
    del report["fingerprint"]["normalized"]  # recorded before normalised hashes existed
    return root, kernel, report


def test_normalised_hashes_are_computed_from_the_measured_source_not_todays(history):
    """The file was edited after the run: its hash comes from the commit with the measured
    bytes, so the edited code still reads as a change."""
    root, _, report = history
    normalized, problems = normalized_from_measured(report, root)
    assert problems == []
    assert normalized == {KERNEL: normalized_sha256(SOURCE.encode(), KERNEL)}
    assert normalized[KERNEL] != normalized_sha256(CODE_CHANGED.encode(), KERNEL)
    report["fingerprint"]["normalized"] = normalized
    assert "more than comments" in validate(report, root)[0]


def test_a_measured_source_that_is_gone_gets_no_normalised_hash(history):
    root, _, report = history
    report["fingerprint"]["files"][KERNEL] = hashlib.sha256(b"never committed").hexdigest()
    assert measured_source(report, KERNEL, root, from_git=True) is None
    normalized, problems = normalized_from_measured(report, root)
    assert normalized == {} and problems == [
        f"{KERNEL}: the measured source is gone; it keeps its sha256 only"
    ]


def test_the_command_adds_the_hashes_and_refuses_what_is_not_a_report(history, tmp_path, capsys):
    root, _, report = history
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    assert report_cli._normalize([path], root) == 0
    written = json.loads(path.read_text())
    assert written["fingerprint"]["normalized"] == normalized_from_measured(report, root)[0]
    assert {k: v for k, v in written.items() if k != "fingerprint"} == {
        k: v for k, v in report.items() if k != "fingerprint"
    }
    for text in ("{not json", '{"fingerprint": 3}', "[]"):
        path.write_text(text)
        capsys.readouterr()
        assert report_cli._normalize([path], root) == 1
        error = capsys.readouterr().err
        assert "cannot read a report's fingerprint" in error and error.count("\n") == 1
        assert path.read_text() == text, "a file that is not a report was rewritten"


def test_a_recorded_report_gets_back_the_normalised_hashes_it_records(tmp_path):
    """Recomputing a recorded report's (and a script record's) normalised hashes from what it
    measured gives exactly what it records."""
    for name in ("softmax-compiled.json", "clock-probe.json"):
        recorded = json.loads((REPO_ROOT / "results" / "h200" / name).read_text())
        assert set(recorded["fingerprint"]["normalized"]) == set(recorded["fingerprint"]["files"])
        stripped = copy.deepcopy(recorded)
        del stripped["fingerprint"]["normalized"]
        path = tmp_path / name
        path.write_text(json.dumps(stripped))
        assert report_cli.main(["normalize", str(path)]) == 0
        assert json.loads(path.read_text()) == recorded


# --------------------------------------------------------------------------- a recorded sweep


def _measured_tree(report: dict, root: Path) -> None:
    """Lay out under ``root`` every file ``report`` fingerprints, and its snapshots, with the
    content it measured (taken from the repository, its snapshots or its history)."""
    for path in report["fingerprint"]["files"]:
        content = measured_source(report, path, REPO_ROOT, from_git=True)
        assert content is not None, f"{path}: the measured source is gone"
        for name in (path, report["source_snapshots"].get(path)):
            if name:
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                (root / name).write_bytes(content)


def test_a_docstring_fix_in_the_engine_keeps_the_recorded_sweep_valid(tmp_path):
    """results/h200/all.json on a copy of the code it measured: fixing the engine's docstring
    and comments leaves it valid; a one-line code change makes it stale."""
    report = json.loads((REPO_ROOT / "results" / "h200" / "all.json").read_text())
    engine = "learning/bench/engine.py"
    assert engine in report["fingerprint"]["normalized"]
    root = tmp_path / "repo"
    _measured_tree(report, root)
    # The engine file is compared as it lies in the tree, not through its snapshot.
    report["source_snapshots"].pop(engine, None)
    assert validate(report, root) == []

    source = (root / engine).read_text()
    assert source.startswith('"""'), "the engine's module docstring comes first"
    fixed = source.replace('"""', '"""A sentence fixed after the run.\n\n', 1)
    fixed = fixed.replace("\nimport ", "\n# A comment added after the run.\nimport ", 1)
    assert fixed.count("after the run") == 2
    (root / engine).write_text(fixed)
    assert validate(report, root) == []

    (root / engine).write_text(fixed + "\nEDITED_AFTER_THE_RUN = True\n")
    problems = validate(report, root)
    assert len(problems) == 1 and problems[0].startswith(f"{engine}: changed since the run")
