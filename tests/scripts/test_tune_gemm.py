"""Does tune_gemm.py report its own A/A pair: the reference timed twice, their difference per
case, and nothing for a case where either timing is missing?"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import tune_gemm  # noqa: E402


def _row(case, candidate, ms):
    return {"case": case, "candidate": candidate, "ms": ms, "tflops": None, "failure": ""}


def test_a_a_spread_is_the_second_timing_over_the_first():
    rows = [_row("a", "reference", 2.0), _row("a", tune_gemm.AGAIN, 2.05),
            _row("a", "torch.mm", 1.9), _row("b", "reference", None),
            _row("b", tune_gemm.AGAIN, 1.0), _row("c", "reference", 1.0)]  # fmt: skip
    spreads = tune_gemm.a_a_spreads(rows)
    assert set(spreads) == {"a"}
    assert abs(spreads["a"] - 0.025) < 1e-12


def test_the_table_names_the_method_error(capsys):
    tune_gemm.print_table([_row("a", "reference", 1.0), _row("a", tune_gemm.AGAIN, 0.99)])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("A/A") and "a -1.0%" in last and "under 1.0%" in last
