"""Does ``python -m learning.report snapshot`` keep the measured sources as data, under names no
tool reads as code, and do the copies still prove the report?"""

import json
from pathlib import Path

from learning.report import __main__ as report_cli
from learning.report.fingerprint import fingerprint_record
from learning.report.validate import fingerprint_problems

KERNEL = "reference/kernels/softmax.py"
SOURCE = b'"""Softmax."""\n\n\ndef softmax(x):\n    return x.softmax(-1)\n'


def _scratch(tmp_path: Path) -> tuple[Path, Path]:
    """A repository with one kernel file and a report (as JSON) that fingerprints it."""
    root = tmp_path / "repo"
    (root / KERNEL).parent.mkdir(parents=True)
    (root / KERNEL).write_bytes(SOURCE)
    report = {"fingerprint": fingerprint_record([root / KERNEL], root), "source_snapshots": {}}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    return root, path


def test_a_snapshot_is_stored_under_its_data_name_with_the_measured_bytes(tmp_path, capsys):
    root, path = _scratch(tmp_path)
    assert report_cli._snapshot(path, repo_root=root) == 0
    report = json.loads(path.read_text())
    digest = report["fingerprint"]["files"][KERNEL]
    name = f"results/snapshots/{digest[:16]}-softmax.py.txt"
    assert report["source_snapshots"] == {KERNEL: name}
    assert (root / name).read_bytes() == SOURCE
    assert [p.name for p in (root / "results" / "snapshots").iterdir()] == [Path(name).name]
    # the copy, not the live file, proves the report once the file is edited
    (root / KERNEL).write_bytes(SOURCE.replace(b"(-1)", b"(0)"))
    assert fingerprint_problems(report, root) == []
    assert "1 of 1 source files preserved" in capsys.readouterr().out


def test_a_source_preserved_for_another_report_is_shared_not_copied_again(tmp_path):
    root, path = _scratch(tmp_path)
    assert report_cli._snapshot(path, repo_root=root) == 0
    second = tmp_path / "second.json"
    second.write_text(json.dumps({**json.loads(path.read_text()), "source_snapshots": {}}))
    assert report_cli._snapshot(second, repo_root=root) == 0
    assert json.loads(second.read_text())["source_snapshots"] == json.loads(
        path.read_text()
    )["source_snapshots"]
    assert len(list((root / "results" / "snapshots").iterdir())) == 1


def test_a_copy_under_the_code_name_that_was_there_is_left_for_its_report(tmp_path):
    """An older release kept snapshots under the file's own name; a new report's snapshot of the
    same content is made beside it, and the old report keeps its copy."""
    root, path = _scratch(tmp_path)
    digest = json.loads(path.read_text())["fingerprint"]["files"][KERNEL]
    old = root / "results" / "snapshots" / f"{digest[:16]}-softmax.py"
    old.parent.mkdir(parents=True)
    old.write_bytes(SOURCE)
    assert report_cli._snapshot(path, repo_root=root) == 0
    assert old.read_bytes() == SOURCE
    assert json.loads(path.read_text())["source_snapshots"][KERNEL].endswith("softmax.py.txt")


def test_a_file_changed_since_the_run_is_not_preserved(tmp_path, capsys):
    root, path = _scratch(tmp_path)
    (root / KERNEL).write_bytes(SOURCE + b"# edited\n")
    assert report_cli._snapshot(path, repo_root=root) == 1
    assert json.loads(path.read_text())["source_snapshots"] == {}
    assert "changed since the run" in capsys.readouterr().err
    assert not (root / "results" / "snapshots").exists()
