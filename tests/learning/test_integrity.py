"""learning.check.integrity: a worker's writes to the machine and its escaped processes are seen."""

import os
import subprocess
import sys
import textwrap

import pytest

from learning.check import integrity


@pytest.fixture
def module_dir(tmp_path, monkeypatch):
    folder = tmp_path / "lib"
    folder.mkdir()
    (folder / "course_thing.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(folder))
    import course_thing  # noqa: F401

    yield folder
    sys.modules.pop("course_thing", None)


def test_an_edit_to_a_loaded_file_is_seen_even_with_its_times_put_back(module_dir):
    path = module_dir / "course_thing.py"
    before = integrity.snapshot()
    assert integrity.changed(before) == []
    status = os.stat(path)
    path.write_text("VALUE = 2\n")
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))  # the mtime put back
    assert os.stat(path).st_mtime_ns == status.st_mtime_ns
    assert str(path.resolve()) in integrity.changed(before)


def test_a_new_file_beside_loaded_modules_is_seen(module_dir):
    before = integrity.snapshot()
    (module_dir / "sitecustomize.py").write_text("print('hello')\n")
    assert str(module_dir.resolve()) in integrity.changed(before)


def test_another_programs_files_beside_loaded_modules_are_no_change(module_dir):
    """A log, a report, a cache folder and a temporary file that another program (a test run
    beside the check, an editor) writes or removes next to the course are no code any process
    of the checker loads: the run stays trusted."""
    (module_dir / "old.log").write_text("")
    before = integrity.snapshot()
    (module_dir / "run.log").write_text("a line\n")
    (module_dir / "report.json").write_text("{}\n")
    (module_dir / ".pytest_cache").mkdir()
    (module_dir / "tmpk3j_x9").write_bytes(b"")
    (module_dir / "old.log").unlink()
    assert integrity.changed(before) == []


@pytest.mark.parametrize("how", ["new module", "new package", "pth", "metadata", "removed",
                                 "replaced by a rename"])  # fmt: skip
def test_code_added_removed_or_replaced_beside_loaded_modules_is_seen(module_dir, how):
    before = integrity.snapshot()
    if how == "new module":
        (module_dir / "json.py").write_text("")
    elif how == "new package":
        (module_dir / "fastjsonschema").mkdir()
    elif how == "pth":
        (module_dir / "evil.pth").write_text("import os\n")
    elif how == "metadata":
        (module_dir / "plugin-1.0.dist-info").mkdir()
    elif how == "removed":
        (module_dir / "course_thing.py").unlink()
    else:
        (module_dir / "new.tmp").write_text("VALUE = 2\n")
        os.replace(module_dir / "new.tmp", module_dir / "course_thing.py")
    assert str(module_dir.resolve()) in integrity.changed(before)


def test_a_file_written_beside_the_course_during_a_check_costs_no_marks(module_dir,
                                                                       monkeypatch):  # fmt: skip
    """Another program writes a log into a folder on the checker's import path while a check
    runs (a test run beside it, as ``pytest -n 2`` does): the learner's marks stand."""
    from learning.check import runner

    snapshot = integrity.snapshot

    def written_meanwhile(*args, **kwargs):
        state = snapshot(*args, **kwargs)
        (module_dir / "other-program.log").write_text("written during the check\n")
        return state

    monkeypatch.setattr(integrity, "snapshot", written_meanwhile)
    report = runner.check_exercise("oracles", "reference", seed=7)
    assert (module_dir / "other-program.log").exists()
    assert report.points == report.max_points, [c.message for c in report.checks if not c.passed]


def test_the_learners_own_folder_is_not_watched(module_dir):
    before = integrity.snapshot(exclude=[module_dir])
    (module_dir / "course_thing.py").write_text("VALUE = 3\n")
    (module_dir / "other.py").write_text("")
    assert integrity.changed(before) == []


def test_many_changes_are_counted_after_the_first_few(tmp_path, monkeypatch):
    files = []
    for index in range(8):
        path = tmp_path / f"m{index}.py"
        path.write_text("")
        files.append(str(path))
    before = integrity.DiskState({path: integrity._identity(path) for path in files})
    for path in files:
        with open(path, "a") as handle:
            handle.write("x = 1\n")
    shown = integrity.changed(before, limit=3)
    assert shown[:3] == files[:3] and shown[3] == "and 5 more"


_TRUSTED = """
import os, subprocess, sys, time
from learning.check import integrity
assert integrity.become_subreaper()
others = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
before = set(integrity.children())          # what this process started itself
worker = subprocess.Popen([sys.executable, "-c", sys.argv[1]], start_new_session=True)
worker.wait(timeout=30)
pid_file = sys.argv[2]
deadline = time.monotonic() + 30
while not (os.path.exists(pid_file) and open(pid_file).read()):
    assert time.monotonic() < deadline, "the grandchild never started"
    time.sleep(0.05)
escaped = int(open(pid_file).read())
alive_before = os.path.exists(f"/proc/{escaped}")
killed = integrity.kill_strays(keep=before)
print(alive_before, killed, os.path.exists(f"/proc/{escaped}"), others.poll() is None)
others.kill()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux")
def test_an_escaped_grandchild_is_killed_and_the_checkers_own_children_live_on(tmp_path):
    """A worker that forks, calls setsid in the child and exits leaves an orphan in another
    session: killing the worker's process group misses it; a subreaper does not. (Run in a
    process of its own: a subreaper kills what it did not start, and pytest starts things.)"""
    pid_file = tmp_path / "pid"
    worker = textwrap.dedent(f"""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                open({str(pid_file)!r}, "w").write(str(os.getpid()))
                time.sleep(60)
            os._exit(0)
        os._exit(0)
    """)
    result = subprocess.run([sys.executable, "-c", _TRUSTED, worker, str(pid_file)],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
    alive_before, killed, alive_after, others_alive = result.stdout.split()
    assert alive_before == "True" and int(killed) >= 1
    assert alive_after == "False", "the escaped grandchild survived"
    assert others_alive == "True", "a process the checker started itself was killed"


@pytest.mark.skipif(integrity.dumpable() is None, reason="PR_GET_DUMPABLE is Linux's")
def test_the_checker_is_not_dumpable_while_a_check_module_runs(monkeypatch):
    """While learner code can run, is the checker's process closed to /proc readers of its
    user (memory, environment, open files: where the seed is), and as it was afterwards?"""
    import importlib

    from learning.check.model import CheckResult
    from learning.check.runner import check_exercise

    module = importlib.import_module("learning.check.foundations")
    seen = []

    def run(exercise, impl, session):
        seen.append(integrity.dumpable())
        return [CheckResult("looked", True, 1.0, "")]

    monkeypatch.setattr(module, "run", run)
    before = integrity.dumpable()
    assert before is True  # an ordinary process
    check_exercise("tensors", "reference")
    assert seen == [False]
    assert integrity.dumpable() is before
    with integrity.hidden():  # nested, as the grader's run holds a check's
        with integrity.hidden():
            assert integrity.dumpable() is False
        assert integrity.dumpable() is False
    assert integrity.dumpable() is True
