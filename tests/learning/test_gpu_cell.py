"""learning.gpu_cell: what a lesson's `gpu` cells run on a GPU, and the line they print without one.

No GPU is needed: whether there is one (`gpu_cell.why_not`) is set by each test, and
`subprocess.run` is replaced, so nothing is timed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from learning import gpu_cell


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(gpu_cell, "why_not", lambda: "no CUDA GPU here")

    def ran(*args, **kwargs):
        raise AssertionError(f"a skipped cell started {args}")

    monkeypatch.setattr(subprocess, "run", ran)


@pytest.fixture
def a_gpu(monkeypatch, tmp_path):
    """A machine with a GPU, whose course folder is tmp_path; the commands started, recorded,
    each exiting with `exits[0]`."""
    monkeypatch.setattr(gpu_cell, "why_not", lambda: None)
    monkeypatch.setattr(gpu_cell, "REPO_ROOT", tmp_path)
    started, exits = [], [0]

    def run(command, **kwargs):
        started.append((command, kwargs))
        return subprocess.CompletedProcess(command, exits[0], stdout="the table\n", stderr="")

    monkeypatch.setattr(subprocess, "run", run)
    return started, exits


def test_without_a_gpu_a_benchmark_is_one_line_naming_the_command(no_gpu, capsys):
    assert gpu_cell.bench("add", "--op", "add", "--dtype", "float16") is None
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1, lines
    line = lines[0]
    assert line.startswith(f"{gpu_cell.SKIPPED}no CUDA GPU here: on a GPU it runs ")
    assert line.endswith(
        "-m learning.bench --op add --dtype float16 --impl learner "
        "--output results/local/add.json --force"
    ), line


def test_without_a_gpu_a_script_or_a_cell_of_code_is_one_line(no_gpu, capsys):
    assert gpu_cell.script("cuda_runs.py", "--runs", "3") is None  # no value for a cell to show
    assert gpu_cell.on_gpu("traces the block") is False
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("runs " + gpu_cell.shown(["scripts/cuda_runs.py", "--runs", "3"]))
    assert lines[1] == f"{gpu_cell.SKIPPED}no CUDA GPU here: on a GPU it traces the block"
    assert len(lines) == 2


def test_the_command_names_the_course_python_as_the_readme_does(monkeypatch, tmp_path):
    python = tmp_path / ".venv" / "bin" / "python"
    monkeypatch.setattr(gpu_cell, "REPO_ROOT", tmp_path)
    monkeypatch.setattr(sys, "executable", str(python))
    assert gpu_cell.shown(["-m", "learning.bench"]) == ".venv/bin/python -m learning.bench"
    monkeypatch.setattr(sys, "executable", "/usr/bin/python3")  # a Python outside the course
    assert gpu_cell.shown(["-m", "x"]) == "/usr/bin/python3 -m x"


def test_on_a_gpu_the_benchmark_runs_with_this_python_in_the_course_folder(a_gpu, capsys):
    started, _ = a_gpu
    report = gpu_cell.bench("softmax", "--op", "softmax", "--shape", 1024, 1024)
    (command, kwargs), = started
    assert command == [sys.executable, "-m", "learning.bench", "--op", "softmax", "--shape",
                       "1024", "1024", "--impl", "learner",
                       "--output", str(Path("results", "local", "softmax.json")), "--force"]
    assert kwargs["cwd"] == gpu_cell.REPO_ROOT
    assert report == gpu_cell.REPO_ROOT / "results" / "local" / "softmax.json"
    assert report.parent.is_dir()
    assert "the table" in capsys.readouterr().out


def test_on_a_gpu_the_course_kernels_can_be_timed_quietly(a_gpu, capsys):
    started, _ = a_gpu
    gpu_cell.bench("first", "--op", "softmax", impl="reference", show=False)
    assert started[0][0][-5:] == ["--impl", "reference", "--output",
                                  str(Path("results", "local", "first.json")), "--force"]
    assert capsys.readouterr().out == ""


def test_a_failed_run_shows_its_output_and_stops_the_cell(a_gpu, capsys):
    _, exits = a_gpu
    exits[0] = 2
    with pytest.raises(RuntimeError, match=r"exited with status 2 \(its output is above\)$"):
        gpu_cell.bench("add", "--op", "add")
    assert "the table" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda: gpu_cell.bench("../add", "--op", "add"), "report name"),
        (lambda: gpu_cell.bench("add.json", "--op", "add"), "without '.json'"),
        (lambda: gpu_cell.bench("", "--op", "add"), "report name"),
        (lambda: gpu_cell.bench("add", "--op", "add", impl="mine"), "impl="),
        (lambda: gpu_cell.bench("add", "--output", "x.json"), "leave out --output"),
        (lambda: gpu_cell.bench("add", "--impl=learner"), "leave out --impl=learner"),
        (lambda: gpu_cell.script("no_such_script.py"), "scripts/no_such_script.py is none"),
    ],
)
def test_a_bad_call_is_refused_in_one_line_before_anything_runs(a_gpu, call, says):
    started, _ = a_gpu
    with pytest.raises(ValueError, match=r"^[^\n]*$") as error:
        call()
    assert says in str(error.value)
    assert not started


def test_the_reason_names_what_is_missing(monkeypatch):
    """No CUDA GPU, or one that Triton is told to leave alone (TRITON_INTERPRET=1)."""
    import torch

    from learning import runtime

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu_cell.why_not() == "no CUDA GPU here"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(runtime, "interpreting", lambda: True)
    assert "TRITON_INTERPRET=1" in gpu_cell.why_not()
    monkeypatch.setattr(runtime, "interpreting", lambda: False)
    assert gpu_cell.why_not() is None
