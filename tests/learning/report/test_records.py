"""Does a script record say which code made it, and notice when that code has changed? (CPU)"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from learning.report import is_record, load_data, validate, validate_file, write_record
from learning.report.fingerprint import REPO_ROOT

DATA = {"rows": [{"shape": "64x512", "ms": 0.02}], "environment": {"device": "FIXTURE"}}


@pytest.fixture
def fake_repo(tmp_path: Path) -> Path:
    """A repository-shaped folder with one script and one non-Python source, outside the repo."""
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    (root / "cuda").mkdir()
    (root / "scripts" / "measure.py").write_text("print('measuring')\n")
    (root / "cuda" / "kernel.cu").write_text("__global__ void k() {}\n")
    return root


def test_a_fresh_record_validates_and_fails_once_a_fingerprinted_file_changes(fake_repo: Path):
    """Is a just-written record valid, and invalid after a source it fingerprints is edited?"""
    output = fake_repo / "results" / "measure.json"
    output.parent.mkdir()
    write_record(
        output,
        script=fake_repo / "scripts" / "measure.py",
        data=DATA,
        argv=["--output", "results/measure.json"],
        extra_files=[fake_repo / "cuda" / "kernel.cu"],
        repo_root=fake_repo,
    )
    record = json.loads(output.read_text())
    assert is_record(record) and record["script"] == "scripts/measure.py"
    assert set(record["fingerprint"]["files"]) >= {"scripts/measure.py", "cuda/kernel.cu"}
    assert validate_file(output, repo_root=fake_repo) == []

    (fake_repo / "cuda" / "kernel.cu").write_text("__global__ void k() { /* changed */ }\n")
    problems = validate_file(output, repo_root=fake_repo)
    assert len(problems) == 1 and problems[0].startswith("cuda/kernel.cu"), problems

    (fake_repo / "scripts" / "measure.py").unlink()
    problems = validate_file(output, repo_root=fake_repo)
    assert any(p.startswith("scripts/measure.py") for p in problems), problems


def test_a_record_of_a_repository_script_fingerprints_what_it_loaded(tmp_path: Path):
    """Does a record of a course script hold that script and the loaded course modules, with
    both hashes of each, and does changing the hash validation compares make it invalid?"""
    output = tmp_path / "record.json"
    write_record(output, script=REPO_ROOT / "scripts" / "cuda_runs.py", data=DATA, argv=[])
    record = json.loads(output.read_text())
    files = record["fingerprint"]["files"]
    assert "scripts/cuda_runs.py" in files and "learning/report/records.py" in files
    assert all(not Path(name).is_absolute() for name in files), files
    assert set(record["fingerprint"]["normalized"]) == set(files)
    assert validate(record) == []

    altered = copy.deepcopy(record)
    altered["fingerprint"]["normalized"]["learning/report/records.py"] = "0" * 64
    problems = validate(altered)
    assert len(problems) == 1 and problems[0].startswith("learning/report/records.py"), problems
    assert "the report was altered" in problems[0]

    del record["fingerprint"]["normalized"]  # a record made before normalised hashes existed
    record["fingerprint"]["files"]["learning/report/records.py"] = "0" * 64
    problems = validate(record)
    assert len(problems) == 1 and problems[0].startswith("learning/report/records.py"), problems


def test_a_broken_envelope_is_reported():
    """Is a record without its data, or of an unknown version, refused by the schema check?"""
    output_less = {
        "record": "script-output",
        "record_version": 1,
        "script": "scripts/x.py",
        "argv": [],
        "recorded_at": "2026-01-01T00:00:00+00:00",
        "fingerprint": {"algorithm": "sha256", "files": {"scripts/x.py": "0" * 64}},
        "source_snapshots": {},
        "fingerprint_note": None,
    }
    assert any("data" in p for p in validate(output_less))
    assert any("record_version" in p for p in validate({**output_less, "record_version": 9}))


def test_non_finite_data_is_refused_before_anything_is_written(tmp_path: Path):
    """JSON has no NaN: is such data refused, and an existing file left as it was?"""
    output = tmp_path / "record.json"
    output.write_text('{"old": true}\n')
    with pytest.raises(ValueError):
        write_record(output, script=REPO_ROOT / "scripts" / "cuda_runs.py", data=[float("nan")])
    assert output.read_text() == '{"old": true}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["record.json"], "a temporary file was left"


def test_load_data_reads_a_record_and_a_raw_file_alike(tmp_path: Path):
    """Does a reader get the script's own output from a record and from an older raw file?"""
    record, raw = tmp_path / "record.json", tmp_path / "raw.json"
    write_record(record, script=REPO_ROOT / "scripts" / "cuda_runs.py", data=DATA, argv=[])
    raw.write_text(json.dumps(DATA))
    assert load_data(record) == DATA == load_data(raw)
