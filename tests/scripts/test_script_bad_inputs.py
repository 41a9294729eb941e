"""Do the maintainers' scripts answer bad input with one line and exit 2, writing nothing?"""

import json
import sys
from pathlib import Path

import pytest
import warm_python

import learning  # noqa: F401  (selects the Triton backend)
from learning.runtime import interpreting

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _run(script, *args):
    return warm_python.run([sys.executable, str(SCRIPTS / script), *map(str, args)],
                           capture_output=True, text=True, timeout=120)  # fmt: skip


def _one_line_exit_2(result, prefix):
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith(prefix)


def test_report_results_rejects_what_is_not_a_report(tmp_path):
    """A JSON that is no kernel-bench report, or an output in a missing folder: no file."""
    not_a_report = tmp_path / "x.json"
    not_a_report.write_text(json.dumps({"rows": []}))
    output = tmp_path / "out.md"
    _one_line_exit_2(_run("report_results.py", not_a_report, "--output", output),
                     "report_results: ")  # fmt: skip
    assert not output.exists()
    report = SCRIPTS.parent / "results" / "h200" / "softmax-compiled.json"
    missing = tmp_path / "missing" / "out.md"
    _one_line_exit_2(_run("report_results.py", report, "--output", missing), "report_results: ")


def test_validate_kernels_rejects_an_unknown_op_or_dtype():
    _one_line_exit_2(_run("validate_kernels.py", "--ops", "nope"), "validate_kernels: ")
    _one_line_exit_2(_run("validate_kernels.py", "--ops", "add", "--dtypes", "int8"),
                     "validate_kernels: ")  # fmt: skip


@pytest.mark.skipif(not interpreting(), reason="checks the CPU refusal")
@pytest.mark.parametrize(
    "script, args",
    [
        ("compile_overhead.py", []),
        ("external_baselines.py", ["--cases", "matmul"]),
        ("row_chunk_sweep.py", []),
        ("row_sum_code.py", []),
    ],
)
def test_gpu_scripts_refuse_a_cpu_in_one_line_and_write_nothing(script, args, tmp_path):
    output = tmp_path / "out.json"
    done = _run(script, *args, "--output", output)
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(done.stdout.strip().splitlines()) == 1 and "GPU" in done.stdout
    assert "Traceback" not in done.stderr
    assert not output.exists()


@pytest.mark.parametrize("script", ["tune_gemm.py", "gemm_grouping.py", "row_sum_code.py"])
@pytest.mark.parametrize("rounds", ["0", "two"])
def test_gemm_scripts_reject_a_bad_round_count(script, rounds, tmp_path):
    """An interleaved timing needs at least one round: one line, exit 2, nothing written."""
    output = tmp_path / "out.json"
    _one_line_exit_2(_run(script, "--rounds", rounds, "--output", output),
                     f"{script.removesuffix('.py')}: error: ")  # fmt: skip
    assert not output.exists()
