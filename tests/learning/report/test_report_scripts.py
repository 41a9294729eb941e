"""Do the companion scripts read a report (and refuse politely on a CPU)?"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

SCRIPTS = Path(__file__).resolve().parents[3] / "scripts"
RECORD_KEYS = {
    "kernel",
    "gpu",
    "vendor",
    "correctness",
    "latency_us",
    "tflops",
    "gbps",
    "vs_pytorch",
    "dtype",
    "shape",
    "status",
}


def _script(name: str):
    spec = importlib.util.spec_from_file_location(f"script_{name}", SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_report_results_writes_markdown_records_and_a_chart(cpu_run, tmp_path):
    report = cpu_run()
    markdown, records, chart = tmp_path / "r.md", tmp_path / "r.json", tmp_path / "r.png"
    main = _script("report_results").main
    assert (
        main(
            [
                str(report.path),
                "--output",
                str(markdown),
                "--records",
                str(records),
                "--plot",
                str(chart),
            ]
        )
        == 0
    )
    text = markdown.read_text()
    assert "| softmax | 4x8 | float32 | triton | timed |" in text and "validation: valid" in text
    rows = json.loads(records.read_text())
    assert len(rows) == 4 and all(set(row) == RECORD_KEYS for row in rows)
    assert chart.stat().st_size > 1000


def test_stability_summary_measures_deviation_from_the_median_ratio():
    summary = _script("benchmark_stability").summary
    result = summary([{"a": 1.00, "b": 2.0}, {"a": 1.02, "b": 2.0}, {"a": 0.99, "b": 2.2}])
    assert result["cases"] == 2
    assert result["worst_deviation"] == pytest.approx(0.1)
    assert result["most_moved"][0]["case"] == "b"


@pytest.mark.skipif(
    torch.cuda.is_available(), reason="checks the refusal on a machine without a GPU"
)
@pytest.mark.parametrize("name", ["gpu_clock_probe", "benchmark_stability"])
def test_gpu_scripts_exit_2_on_a_cpu(name, capsys):
    assert _script(name).main([]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
