"""Does the rows kernel compile to what lesson 13 says: 2-byte loads at odd widths even with
aligned rows, 16-byte asynchronous copies at 1024 x 2048 with aligned rows? (No GPU needed:
the script compiles for sm_90 with Triton's own compiler.)"""

import sys
from pathlib import Path

import warm_python

SCRIPT = Path(__file__).resolve().parent / "gemm_load_widths.py"


def _run(*args):
    return warm_python.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                           timeout=300)  # fmt: skip


def test_odd_widths_load_two_bytes_at_a_time_even_when_aligned():
    done = _run("--widths", "1023x1999", "1024x2048")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {tuple(line.split()[:2]): line for line in done.stdout.splitlines()[1:]}
    assert "ld.global.b16" in rows[("1023x1999", "aligned")]
    assert "cp.async" not in rows[("1023x1999", "aligned")]
    assert "cp.async.cg.shared.global" in rows[("1024x2048", "aligned")]
    assert "cp.async" not in rows[("1024x2048", "any")]


def test_a_bad_width_is_one_line_and_exit_2():
    done = _run("--widths", "12y")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "gemm_load_widths: error: width '12y' is not MxN (for example 1023x1999)"
    ]
