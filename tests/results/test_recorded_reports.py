"""Does every recorded output (kernel-bench reports and script records) still describe the code
in this repository?"""

import json
from pathlib import Path

import pytest

from learning import report
from learning.report.fingerprint import file_hashes

RESULTS = Path(__file__).resolve().parents[2] / "results"
RECORDED = sorted(RESULTS.glob("h200/*.json"))
REPORTS = [path for path in RECORDED if "schema_version" in json.loads(path.read_text())]


def test_the_recorded_evidence_is_there():
    """Are the reports the lessons quote present?"""
    names = {path.stem for path in REPORTS}
    expected = {"all", "all-cold", "softmax-compiled", "norm-compiled", "gemm-bf16",
                "softmax-events", "training", "gemm-train"}  # fmt: skip
    assert expected <= names, f"missing: {sorted(expected - names)}"


@pytest.mark.parametrize("path", RECORDED, ids=lambda path: path.name)
def test_recorded_output_validates(path):
    """Every JSON under results/h200/ is a report or a script record whose schema, fingerprints
    (or snapshots) and, for reports, internal consistency all hold?"""
    problems = report.validate(json.loads(path.read_text()), RESULTS.parent)
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("path", REPORTS, ids=lambda path: path.name)
def test_recorded_report_was_measured_on_a_gpu(path):
    """Evidence is a GPU timing, never an interpreter one, and every timed variant passed."""
    data = json.loads(path.read_text())
    assert data["settings"]["device"] == "cuda"
    assert data["complete"] is True
    for case in data["cases"]:
        for variant in case["variants"]:
            if variant["status"] == "timed":
                assert variant["correctness"]["passed"] is True


# The sweeps the targets are judged on: re-recorded after every change to code they measured
# (scripts/h200_evidence.sh final, final-training; final-rows after a row-kernel change and
# final-gemm after a matmul.py change), so they describe the landed code itself, not a
# snapshot of an older version of it.
CURRENT = ("all", "all-cold", "training", "gemm-bf16", "gemm-train", "validate-kernels")


@pytest.mark.parametrize("name", CURRENT)
def test_the_recorded_sweeps_measured_the_landed_code(name):
    """Does every file a recorded sweep fingerprints still do what the measured one did (its
    normalised hash: comments, docstrings and layout may have been edited since)?"""
    data = json.loads((RESULTS / "h200" / f"{name}.json").read_text())
    files, normalized = data["fingerprint"]["files"], data["fingerprint"].get("normalized", {})
    assert files, f"{name}.json fingerprints no file"
    changed = []
    for path, digest in files.items():
        raw, now = file_hashes(RESULTS.parent / path, path)
        if (now != normalized[path]) if path in normalized else (raw != digest):
            changed.append(path)
    assert not changed, (
        f"results/h200/{name}.json measured other versions of {', '.join(changed)}: re-record "
        "it on the GPU (scripts/h200_evidence.sh final / final-training / final-rows / "
        "final-gemm) after changing them"
    )


@pytest.mark.parametrize("path", RECORDED, ids=lambda path: path.name)
def test_every_recorded_file_has_a_normalised_hash(path):
    """Is each file compared by what it does, so that fixing a comment or a docstring in it
    keeps the evidence valid? (A report written without them: `python -m learning.report
    normalize REPORT` computes them from the content it measured.)"""
    fingerprint = json.loads(path.read_text())["fingerprint"]
    missing = sorted(set(fingerprint["files"]) - set(fingerprint.get("normalized", {})))
    assert not missing, f"{path.name} has no normalised hash of {', '.join(missing)}"
