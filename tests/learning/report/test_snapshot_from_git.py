"""Can a report whose source was edited after the run still be preserved from git history?"""

import hashlib
import subprocess

from learning.report.fingerprint import create_snapshots


def _git(root, *args):
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def _repo_with_history(tmp_path):
    root = tmp_path / "repo"
    (root / "learning").mkdir(parents=True)
    source = root / "learning" / "kernel.py"
    _git(root.parent, "init", "-q", str(root))
    _git(root, "config", "user.email", "t@example.invalid")
    _git(root, "config", "user.name", "t")
    source.write_text("MEASURED = 1\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "measured")
    measured = hashlib.sha256(source.read_bytes()).hexdigest()
    source.write_text("MEASURED = 2  # edited after the run\n")
    return root, measured


def test_an_edited_file_is_recovered_from_the_commit_with_its_hash(tmp_path):
    """With from_git, the snapshot holds the committed bytes whose hash the report recorded?"""
    root, measured = _repo_with_history(tmp_path)
    report = {"fingerprint": {"files": {"learning/kernel.py": measured}}}
    snapshots, problems = create_snapshots(report, root, from_git=True)
    assert problems == []
    copy = root / snapshots["learning/kernel.py"]
    assert hashlib.sha256(copy.read_bytes()).hexdigest() == measured


def test_without_from_git_an_edited_file_is_reported_not_guessed(tmp_path):
    """Without from_git, or with a hash no commit has, nothing is preserved and it says so?"""
    root, measured = _repo_with_history(tmp_path)
    report = {"fingerprint": {"files": {"learning/kernel.py": measured}}}
    assert create_snapshots(report, root)[1] == [
        "learning/kernel.py: changed since the run; the measured source is gone"
    ]
    report = {"fingerprint": {"files": {"learning/kernel.py": "0" * 64}}}
    snapshots, problems = create_snapshots(report, root, from_git=True)
    assert snapshots == {} and len(problems) == 1
