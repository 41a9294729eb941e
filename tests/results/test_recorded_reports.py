"""Does every recorded output (kernel-bench reports and script records) still describe code this
repository can prove, and does each recorded sweep describe the code it has now?

Every card's folder is read (``results/h200/``, ``results/h100/``, ...). Each record is
validated once in a run (schema, provenance, a complete fingerprint, the figures); the tests
below read that one result.
"""

import json
from functools import cache
from pathlib import Path

import pytest

from learning import report
from learning.report import sweeps
from learning.report.fingerprint import REPO_ROOT

RESULTS = REPO_ROOT / "results"
RECORDED = sorted(p for folder in sweeps.evidence_folders(REPO_ROOT) for p in folder.glob("*.json"))


@cache
def _loaded(path: Path) -> dict:
    return json.loads(path.read_text())


REPORTS = [path for path in RECORDED if "schema_version" in _loaded(path)]


@pytest.fixture(scope="session")
def validation() -> dict[Path, list[str]]:
    """Every record's problems, validated once for the whole run."""
    return {path: report.validate(_loaded(path), REPO_ROOT) for path in RECORDED}


def test_the_recorded_evidence_is_there():
    """Are the reports the lessons quote present?"""
    names = {path.stem for path in REPORTS if path.parent.name == "h200"}
    expected = {"all", "all-cold", "softmax-compiled", "norm-compiled", "gemm-bf16",
                "softmax-events", "training", "gemm-train"}  # fmt: skip
    assert expected <= names, f"missing: {sorted(expected - names)}"


def test_every_recorded_output_validates(validation):
    """Every JSON under results/<card>/ is a report or a script record whose schema,
    fingerprints (or snapshots), completeness and, for reports, figures all hold?"""
    invalid = {
        path.relative_to(REPO_ROOT).as_posix(): problems
        for path, problems in validation.items()
        if problems
    }
    assert not invalid, "\n".join(
        f"{path}: {problem}" for path, problems in invalid.items() for problem in problems[:5]
    )


@pytest.mark.parametrize("path", REPORTS, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_recorded_report_was_measured_on_a_gpu(path):
    """Evidence is a GPU timing, never an interpreter one, and every timed variant passed."""
    data = _loaded(path)
    assert data["settings"]["device"] == "cuda"
    assert data["complete"] is True
    for case in data["cases"]:
        for variant in case["variants"]:
            if variant["status"] == "timed":
                assert variant["correctness"]["passed"] is True


def test_each_card_folder_is_named_for_the_gpu_its_reports_measured():
    for path in REPORTS:
        gpu = _loaded(path)["environment"]["gpu_name"]
        assert sweeps.card_folder(gpu) == path.parent.name, f"{path}: measured on {gpu}"


@pytest.mark.parametrize("name", list(sweeps.SWEEPS))
def test_every_sweep_is_fresh_on_some_card(name):
    """Does some card hold this sweep with every case measuring the code as it is now (each
    case's closure: the measurement core, its op's definition and kernels)? A change to one
    kernel stales only its ops' cases; the message names them and the command that re-records
    exactly those."""
    folders = [f for f in sweeps.card_folders(REPO_ROOT) if sweeps.part_files(f, name)]
    if name in sweeps.NOT_YET_RECORDED:
        assert not folders, f"{name} is recorded now: take it out of sweeps.NOT_YET_RECORDED"
        pytest.skip(f"{name}: not yet recorded on any card (python -m learning.report stale)")
    assert folders, f"no card folder records the sweep {name}"
    from learning.report.__main__ import _describe, _plan_text, _states

    states = {folder: _states(folder, [name])[0] for folder in folders}
    if any(state.fresh for state in states.values()):
        return
    newest = max(folders, key=lambda f: sweeps.load_sweep(f, name).files[-1][1].get(
        "started_at") or "")  # fmt: skip
    state = states[newest]
    lines = _describe(state) + _plan_text(sweeps.plan([state]), "OUTDIR", newest.name)
    pytest.fail("no card's recording describes the code as it is now:\n" + "\n".join(lines))


@pytest.mark.parametrize("path", RECORDED, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_every_recorded_file_has_a_normalised_hash(path):
    """Is each file compared by what it does, so that fixing a comment or a docstring in it
    keeps the evidence valid? (A report written without them: `python -m learning.report
    normalize REPORT` computes them from the content it measured.)"""
    fingerprint = _loaded(path)["fingerprint"]
    missing = sorted(set(fingerprint["files"]) - set(fingerprint.get("normalized", {})))
    assert not missing, f"{path.name} has no normalised hash of {', '.join(missing)}"


@pytest.mark.parametrize("path", RECORDED, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_every_recorded_file_is_snapshotted(path):
    """Provenance that never expires: each fingerprinted file's bytes are kept as data, so an
    edit to any of them later (an interface module, a kernel) leaves the record valid."""
    data = _loaded(path)
    kept = set(data.get("source_snapshots") or {})
    missing = sorted(set(data["fingerprint"]["files"]) - kept)
    assert not missing, (
        f"{path.name}: no snapshot of {', '.join(missing[:3])}: python -m learning.report "
        f"snapshot {path.relative_to(REPO_ROOT)}"
    )
