"""Can learner code read the instructor's seed, which decides every hidden input?

The probe is a learner's module that, when the checker's worker imports it, walks from its own
process up through every ancestor (the process server it was forked from, the grader, whatever
started the grader) and reads what ``/proc`` shows of each: the command line, the environment,
every open file descriptor's target, every regular file open there, every file its command line
names, and its own memory. It writes what it found where the test reads it. The grader is run
as an instructor runs it, in a process of its own, with the seed given on stdin from a file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from learning.grade.cli import main as grade_main

REPO = Path(__file__).resolve().parents[2]
SEED = 7318264591  # distinctive: no file, path or address holds these digits by chance
CONTROL = "probe-control-5b1e"  # in the grader's command line: the probe must find it

PROBE = '''
import json, os, stat

# Each needle in two halves, never joined here: this process's memory holds no copy of it.
NEEDLES = {{"seed": (b"{seed_head}", b"{seed_tail}"),
           "control": (b"{control_head}", b"{control_tail}")}}
found = {{name: [] for name in NEEDLES}}
seen = []


def search(place, data):
    for name, (head, tail) in NEEDLES.items():
        at = data.find(head)
        while at >= 0:
            if data[at + len(head):at + len(head) + len(tail)] == tail:
                found[name].append(place)
                break
            at = data.find(head, at + 1)


def read(path, limit=1 << 22):
    try:
        with open(path, "rb") as handle:
            return handle.read(limit)
    except OSError:
        return None


def regular_file(path, limit=1 << 22):
    """A regular file's bytes; never a pipe or socket (reading one would take the data)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.pread(fd, limit, 0)
    except OSError:
        return None
    finally:
        os.close(fd)


def own_memory(limit=1 << 30):
    """This process's writable memory: what it inherited from the server and made since."""
    total = 0
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
        for line in maps:
            fields = line.split()
            if not fields[1].startswith("rw"):
                continue
            start, end = (int(text, 16) for text in fields[0].split("-"))
            if total + end - start > limit:
                continue
            try:
                mem.seek(start)
                data = mem.read(end - start)
            except (OSError, OverflowError, ValueError):
                continue
            total += len(data)
            search(f"own memory {{fields[0]}} {{fields[-1]}}", data)
    return total


pid = os.getpid()
while pid > 1:
    base = f"/proc/{{pid}}"
    cmdline = read(f"{{base}}/cmdline") or b""
    seen.append([pid, os.path.basename(cmdline.split(b"\\0")[0]).decode(errors="replace")])
    search(f"{{pid}} cmdline", cmdline)
    search(f"{{pid}} environ", read(f"{{base}}/environ") or b"")
    for word in cmdline.split(b"\\0"):
        if word.startswith(b"/") and os.path.isfile(word):
            search(f"{{pid}} file named in its command line {{word!r}}", regular_file(word) or b"")
    try:
        fds = os.listdir(f"{{base}}/fd")
    except OSError:
        fds = []
    for fd in fds:
        try:
            target = os.readlink(f"{{base}}/fd/{{fd}}")
        except OSError:
            continue
        search(f"{{pid}} fd {{fd}} -> {{target}}", target.encode())
        search(f"{{pid}} fd {{fd}} ({{target}})", regular_file(f"{{base}}/fd/{{fd}}") or b"")
    status = read(f"{{base}}/stat") or b""
    try:
        pid = int(status.rsplit(b")", 1)[1].split()[1])
    except (IndexError, ValueError):
        break
memory = own_memory()
with open({report!r}, "w") as out:
    json.dump({{"found": found, "ancestors": seen, "memory_bytes": memory}}, out)
'''


def _submission(root: Path, report: Path) -> Path:
    """A learner whose graded module is the probe, and nothing else."""
    learner = root / "class" / "prober"
    foundations = learner / "exercises" / "foundations"
    foundations.mkdir(parents=True)
    (learner / "exercises" / "__init__.py").write_text("")
    (foundations / "__init__.py").write_text("")
    seed, control = str(SEED), CONTROL
    probe = PROBE.format(seed_head=seed[:5], seed_tail=seed[5:], control_head=control[:8],
                         control_tail=control[8:], report=str(report))  # fmt: skip
    (foundations / "bytes_and_layout.py").write_text(textwrap.dedent(probe))
    return root / "class"


def test_learner_code_finds_no_seed_in_any_ancestor(tmp_path):
    """Graded with the seed on stdin, from a file: does the probe, which does find the
    grader's command line, find the seed nowhere (command lines, environments, open files,
    files named on a command line, its own memory)?

    Before the seed left the command line the probe found ``--seed`` and the number in the
    grader's ``/proc/PID/cmdline`` on every run."""
    report = tmp_path / "probe.json"
    submissions = _submission(tmp_path, report)
    seed_file = tmp_path / "seed.txt"
    seed_file.write_text(f"{SEED}\n")
    output = tmp_path / f"grades-{CONTROL}.csv"
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    with open(seed_file) as stdin:  # as a shell's `< seed.txt`: open in the grader alone
        grader = subprocess.Popen(
            [sys.executable, "-m", "learning.grade", str(submissions), "--output", str(output),
             "--exercise", "tensors", "--seed-stdin"],
            cwd=REPO, env=env, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
    _, errors = grader.communicate(timeout=600)
    assert grader.returncode == 0, errors
    assert json.loads((tmp_path / f"grades-{CONTROL}.run.json").read_text())["seed"] == SEED
    probe = json.loads(report.read_text())
    assert probe["found"]["control"], probe["ancestors"]  # it did read the grader's cmdline
    assert probe["memory_bytes"] > 10**6  # and its own memory
    assert probe["found"]["seed"] == [], probe["found"]["seed"]


def test_a_seed_on_the_command_line_is_refused_with_the_reason(tmp_path, capsys):
    """``--seed N``: one line saying why (every process reads a command line) and what to do
    instead, exit 2, nothing graded or written."""
    output = tmp_path / "grades.csv"
    (tmp_path / "class").mkdir()
    status = grade_main([str(tmp_path / "class"), "--output", str(output), "--seed", "424242"])
    assert status == 2
    error = capsys.readouterr().err.strip()
    assert "--seed N is refused" in error and "/proc/PID/cmdline" in error
    assert "--seed-stdin" in error
    assert not output.exists() and not (tmp_path / "grades.run.json").exists()
