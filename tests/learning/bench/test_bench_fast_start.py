"""Does kernel-bench answer ``--help``, ``compare`` and a refused command line without importing
torch (2 s of CPU on a laptop, 8-15 s on a busy one), and end a Ctrl-C with one line?

Each check runs in a fresh interpreter: what a process has imported is the question. No wall-
clock figure is asserted; torch's absence is what makes the answer immediate."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from learning.report.fingerprint import REPO_ROOT

PROBE = (
    "import sys, atexit\n"
    "atexit.register(lambda: print('TORCH', 'torch' in sys.modules, file=sys.stderr))\n"
    "from learning.bench.entry import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def _kernel_bench(*arguments: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run([sys.executable, "-c", PROBE, *arguments], cwd=REPO_ROOT,
                          env=environment, capture_output=True, text=True, timeout=300)  # fmt: skip


def _torch_loaded(done: subprocess.CompletedProcess) -> bool:
    return done.stderr.strip().splitlines()[-1] == "TORCH True"


@pytest.mark.parametrize("arguments", [["--help"], ["compare", "--help"]], ids=" ".join)
def test_help_imports_no_torch(arguments):
    done = _kernel_bench(*arguments)
    assert done.returncode == 0 and "usage" in done.stdout
    assert not _torch_loaded(done)


@pytest.mark.parametrize(
    "arguments, says",
    [
        (["--op", "nope", "--output", "x.json"], "unknown op 'nope'"),
        (["--op", "softmax", "--dtype", "float64", "--output", "x.json"], "unsupported dtype"),
        (["--op", "softmax", "--samples", "5", "--visits", "2", "--output", "x.json"],
         "must be a multiple of --visits"),
        (["--op", "softmax", "--output", "results/h200/all.json"], "already exists"),
        (["--op", "softmax", "--margin", "0", "--output", "x.json"], "--margin"),
        (["compare", "results/h200/all.json", "results/h200/all.json", "--margin", "0"],
         "--margin must be a percentage above 0 and below 100, got 0.0"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else None,
)  # fmt: skip
def test_a_refused_command_line_is_one_line_and_imports_no_torch(arguments, says):
    done = _kernel_bench(*arguments)
    lines = [line for line in done.stderr.strip().splitlines() if not line.startswith("TORCH")]
    assert done.returncode == 2 and len(lines) == 1 and says in lines[0], done.stderr
    assert not _torch_loaded(done)
    assert not (REPO_ROOT / "x.json").exists()


def test_a_deeply_nested_report_is_refused_in_one_line(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    done = _kernel_bench("compare", str(deep), "results/h200/all.json")
    lines = [line for line in done.stderr.strip().splitlines() if not line.startswith("TORCH")]
    assert done.returncode == 2 and lines == [
        f"kernel-bench compare: error: BASE {deep}: nested deeper than 64 levels (MAX_NESTING)"
    ], done.stderr


def test_ctrl_c_while_starting_is_one_line_and_130(tmp_path):
    """SIGINT during the imports of a real run (torch takes seconds to import): one line."""
    output = tmp_path / "run.json"
    environment = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TRITON_INTERPRET": "1"}
    process = subprocess.Popen(
        [sys.executable, "-c", PROBE, "--op", "softmax", "--device", "cpu", "--output",
         str(output)], cwd=REPO_ROOT, env=environment, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(0.5)  # inside the imports of torch (they take seconds), or already running
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=300)
    lines = [line for line in stderr.strip().splitlines() if not line.startswith("TORCH")]
    assert process.returncode == 130, stderr
    assert lines[-1].startswith("kernel-bench: interrupted"), stderr
    assert "Traceback" not in stderr
    assert not output.exists() or json.loads(output.read_text())["complete"] is False


# ------------------------------------------------------------------- python -m learning.bench

# ``python -m learning.bench ARGS``, with what was imported printed at exit.
MODULE_PROBE = (
    "import sys, atexit, runpy\n"
    "atexit.register(lambda: print('TORCH', 'torch' in sys.modules, file=sys.stderr))\n"
    "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)\n"
)


def _module(module: str, *arguments: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run([sys.executable, "-c", MODULE_PROBE, module, *arguments],
                          cwd=REPO_ROOT, env=environment, capture_output=True, text=True,
                          timeout=300)  # fmt: skip


def _said(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in done.stderr.strip().splitlines() if not line.startswith("TORCH")]


def test_python_m_learning_bench_is_the_console_script():
    """``python -m learning.bench compare`` compares, as ``kernel-bench compare`` does."""
    done = subprocess.run([sys.executable, "-m", "learning.bench", "compare", "--help"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0 and done.stdout.startswith("usage: kernel-bench compare"), (
        done.stderr
    )


@pytest.mark.parametrize(
    "arguments, says",
    [
        (["--help"], None),
        (["compare", "--help"], None),
        (["--op", "softmax", "--shape", "1024", "x", "--output", "x.json"],
         "argument --shape: invalid dimension 'x': a positive integer"),
        (["--op", "softmax", "--shape", "-5", "1024", "--output", "x.json"],
         "invalid dimension '-5'"),
        (["--op", "softmax", "--shape", "1.5", "1024", "--output", "x.json"],
         "invalid dimension '1.5'"),
        (["--op", "sofmax", "--output", "x.json"], "unknown op 'sofmax'"),
        (["--op", "softmax", "--margin", "0", "--output", "x.json"], "--margin"),
        (["--op", "softmax", "--output", "no-such-folder/x.json"], "does not exist"),
        (["compare", "no-such.json", "results/h200/all.json"], "BASE no-such.json: no such file"),
        (["compare", "results/h200/all.json", "results/h200/all.json", "--margin", "0"],
         "--margin"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else None,
)  # fmt: skip
def test_python_m_answers_help_and_refusals_without_torch(arguments, says):
    done = _module("learning.bench", *arguments)
    assert "TORCH False" in done.stderr, done.stderr
    if says is None:
        usage = f"usage: kernel-bench {'compare' if arguments[0] == 'compare' else '[-h]'}"
        assert done.returncode == 0 and done.stdout.startswith(usage), done.stdout[:200]
    else:
        assert done.returncode == 2 and _said(done) == [_said(done)[0]], done.stderr
        assert says in _said(done)[0] and _said(done)[0].startswith("kernel-bench")
    assert not (REPO_ROOT / "x.json").exists()


@pytest.mark.parametrize("arguments", [["results/h200/all.json"], ["no-such.json"]],
                         ids=" ".join)  # fmt: skip
def test_validating_imports_no_torch(arguments):
    done = _module("learning.report", "validate", *arguments)
    assert "TORCH False" in done.stderr, done.stderr
    assert done.returncode == (0 if arguments[0].startswith("results") else 2), done.stdout


# A Ctrl-C at a chosen moment: SIGINT sent to itself as the named module is first imported.
INTERRUPTED_PROBE = (
    "import os, runpy, signal, sys\n"
    "class Interrupt:\n"
    "    def __init__(self, name):\n"
    "        self.name = name\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name == self.name:\n"
    "            sys.meta_path.remove(self)\n"
    "            os.kill(os.getpid(), signal.SIGINT)\n"
    "sys.meta_path.insert(0, Interrupt(sys.argv.pop(1)))\n"
    "runpy.run_module('learning.bench', run_name='__main__', alter_sys=True)\n"
)


@pytest.mark.parametrize(
    "moment",
    ["learning.bench.cli",  # while the command line's module loads
     "numpy"],  # inside torch's import, which imports numpy (and used to swallow the Ctrl-C)
)  # fmt: skip
def test_ctrl_c_at_any_moment_of_python_m_is_one_line_and_130(moment, tmp_path):
    output = tmp_path / "run.json"
    environment = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, "-c", INTERRUPTED_PROBE, moment, "--op", "softmax", "--device", "cpu",
         "--output", str(output)], cwd=REPO_ROOT, env=environment, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == ["kernel-bench: interrupted while starting; "
                                                "nothing written"]  # fmt: skip
    assert not output.exists()


def test_ctrl_c_a_moment_after_python_m_starts_is_130(tmp_path):
    """The plain case: ``python -m learning.bench`` and a SIGINT a moment later."""
    output = tmp_path / "run.json"
    environment = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TRITON_INTERPRET": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "learning.bench", "--op", "softmax", "--device", "cpu",
         "--output", str(output)], cwd=REPO_ROOT, env=environment, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1].startswith("kernel-bench: interrupted"), stderr
    assert not output.exists() or json.loads(output.read_text())["complete"] is False


def test_a_cpu_shape_too_large_for_memory_is_one_line_and_2(tmp_path):
    """Refused before anything is allocated: its tensors alone exceed any machine."""
    output = tmp_path / "run.json"
    environment = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "learning.bench", "--op", "softmax", "--shape", "1000000000",
         "1000000000", "--dtype", "float32", "--device", "cpu", "--output", str(output)],
        cwd=REPO_ROOT, env=environment, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kernel-bench: error: softmax/1000000000x"), (
        done.stderr
    )
    assert "GiB available; choose a smaller --shape" in lines[0]
    assert not output.exists()
