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
         "--margin 0: a percentage above 0"),
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
        f"kernel-bench compare: error: BASE {deep}: nested too deeply to be a report"
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
