"""scripts/aa_pairs.py: kernel-bench's A/A pairs read from a report (CPU, synthetic reports)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import warm_python

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import aa_pairs  # noqa: E402


def _variant(name: str, samples_ms: list[float]) -> dict:
    ordered = sorted(samples_ms)
    return {"name": name, "samples_ms": samples_ms, "median_ms": ordered[len(ordered) // 2]}


def _report(cases: list[tuple[str, dict[str, list[float]]]]) -> dict:
    return {"cases": [{"op": op, "shape": [1024, 1024], "dtype": "float32",
                       "variants": [_variant(n, s) for n, s in variants.items()]}
                      for op, variants in cases]}  # fmt: skip


BASE = [0.0070 + 0.0001 * (i % 5) for i in range(15)]
SLOWER = [t * 1.03 for t in BASE]  # learner slower in every round by 3%
MIXED = [t * (1.01 if i % 2 else 0.99) for i, t in enumerate(BASE)]


def test_a_steady_pair_is_flagged_and_a_mixed_one_is_not():
    rows = aa_pairs.pairs(_report([("add", {"triton": BASE, "learner": SLOWER}),
                                   ("rmsnorm", {"triton": BASE, "learner": MIXED}),
                                   ("sum", {"triton": BASE, "compile": BASE})]), "r.json")
    assert [row["case"] for row in rows] == ["add 1024x1024 float32", "rmsnorm 1024x1024 float32"]
    steady, mixed = rows
    assert steady["steady"] and steady["paired"]["slower"] == 15
    assert steady["paired"]["paired_ratio"] == pytest.approx(1 / 1.03)
    assert not mixed["steady"] and mixed["paired"]["slower"] == 7
    assert "1 steady" in aa_pairs.summary(rows) and "2 A/A pairs" in aa_pairs.summary(rows)
    assert "2.9% by medians" in aa_pairs.summary(rows)  # 1 - 1/1.03


def _run(*args) -> subprocess.CompletedProcess:
    return warm_python.run([sys.executable, str(ROOT / "scripts" / "aa_pairs.py"), *map(str, args)],
                           capture_output=True, text=True, cwd=ROOT, timeout=60)  # fmt: skip


def test_it_prints_a_table_and_a_count(tmp_path):
    path = tmp_path / "aa.json"
    path.write_text(json.dumps(_report([("add", {"triton": BASE, "learner": SLOWER})])))
    done = _run(path)
    assert done.returncode == 0, done.stderr
    assert "add 1024x1024 float32" in done.stdout and "steady" in done.stdout
    assert done.stdout.strip().splitlines()[-1].startswith("1 A/A pairs, 1 steady")


@pytest.mark.parametrize(("content", "says"), [
    (None, "cannot read"),
    ("{not json", "cannot read"),
    (json.dumps({"record": "row_plan_cold"}), "not a kernel-bench report"),
    (json.dumps(_report([("add", {"triton": BASE, "compile": BASE})])), "--impl learner"),
])  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(content, says, tmp_path):
    path = tmp_path / "in.json"
    if content is not None:
        path.write_text(content)
    done = _run(path)
    assert done.returncode == 2 and not done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aa_pairs: ") and says in lines[0]
