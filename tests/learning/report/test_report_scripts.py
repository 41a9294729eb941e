"""Do the companion scripts read a report (and refuse politely on a CPU)?"""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import jsonschema
import pytest
import torch

from learning.bench import BenchConfig, run

ROOT = Path(__file__).resolve().parents[3]
SCRIPTS = ROOT / "scripts"
RECORDS_SCHEMA = ROOT / "learning" / "schemas" / "records-v1.json"
H200 = ROOT / "results" / "h200"
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
    jsonschema.validate(rows, json.loads(RECORDS_SCHEMA.read_text()))
    assert {row["shape"] for row in rows} == {"4x8", "3x5"}
    assert all(row["correctness"] is True and row["status"] == "pass" for row in rows)
    assert all(row["tflops"] is None and row["gbps"] > 0 for row in rows)  # softmax: no FLOPs
    assert chart.stat().st_size > 1000


def _report(name: str) -> dict:
    return json.loads((H200 / name).read_text())


def _validator():
    return jsonschema.Draft202012Validator(json.loads(RECORDS_SCHEMA.read_text()))


@pytest.mark.parametrize("name", ["gemm-bf16.json", "all.json"])
def test_records_of_a_recorded_report_fit_the_schema(name):
    module = _script("report_results")
    report = _report(name)
    rows = module.records(report)
    assert module.record_problems(rows) == []
    assert not list(_validator().iter_errors(rows))
    expected = [
        (f"{c['op']}:{v['name']}", "x".join(map(str, c["shape"])), c["dtype"])
        for c in report["cases"]
        for v in c["variants"]
    ]
    assert [(row["kernel"], row["shape"], row["dtype"]) for row in rows] == expected
    assert all(row["gpu"] == "NVIDIA H200" and row["vendor"] == "NVIDIA" for row in rows)
    assert all(row["status"] == "pass" and row["correctness"] is True for row in rows)


def test_gemm_records_have_tflops_and_row_op_records_gbps():
    rows = _script("report_results").records(_report("all.json"))
    gemms = [row for row in rows if row["kernel"].startswith("matmul:")]
    row_ops = [row for row in rows if not row["kernel"].startswith("matmul:")]
    assert len(gemms) == 4 * 3 * 3 and len(row_ops) == 276 - len(gemms)
    assert all(row["gbps"] is None and row["tflops"] > 0 for row in gemms)
    assert all(len(row["shape"].split("x")) == 3 for row in gemms)
    # add, sum and max count a FLOP an element, yet are memory-bound: GB/s, not TFLOP/s.
    assert {row["kernel"].split(":")[0] for row in row_ops} == {
        "add", "sum", "max", "softmax", "rmsnorm"
    }  # fmt: skip
    assert all(row["tflops"] is None and row["gbps"] > 0 for row in row_ops)
    assert all(len(row["shape"].split("x")) == 2 for row in row_ops)
    by_key = {(r["kernel"], r["shape"], r["dtype"]): r for r in rows}
    gemm = by_key[("matmul:triton", "8192x8192x8192", "bfloat16")]
    case = next(
        c for c in _report("all.json")["cases"]
        if c["op"] == "matmul" and c["shape"] == [8192] * 3 and c["dtype"] == "bfloat16"
    )  # fmt: skip
    triton = next(v for v in case["variants"] if v["name"] == "triton")
    assert gemm["latency_us"] == pytest.approx(triton["median_ms"] * 1e3)
    assert gemm["tflops"] == triton["tflops"] and gemm["vs_pytorch"] == triton["ratio_vs_eager"]


def test_training_gemms_are_compute_bound_too():
    rows = _script("report_results").records(_report("training.json"))
    for row in rows:
        gemm = row["kernel"].startswith("matmul_train:")
        assert (row["tflops"] is not None) == gemm and (row["gbps"] is not None) == (not gemm)


WRONG_ROWS = """import torch


def softmax_rows(x):
    return torch.zeros_like(x)
"""


def test_a_variant_that_fails_the_oracle_is_a_failed_record(make_package, tmp_path):
    broken = make_package("broken_reference")
    (tmp_path / broken / "kernels" / "_rows.py").write_text(WRONG_ROWS)
    config = BenchConfig(
        op="softmax", output=tmp_path / "broken.json", shapes=((4, 8),), dtype="float32",
        samples=2, visits=1, device="cpu", quiet=True, impl="reference",
        reference_package=broken, learner_package=make_package("fake_exercises"),
    )  # fmt: skip
    run(config)
    report = json.loads((tmp_path / "broken.json").read_text())
    module = _script("report_results")
    rows = module.records(report)
    assert module.record_problems(rows) == []
    failed = [row for row in rows if row["status"] == "fail"]
    assert [row["kernel"] for row in failed] == ["softmax:triton"], rows
    assert failed[0]["correctness"] is False
    assert failed[0]["latency_us"] is None and failed[0]["gbps"] is None
    assert failed[0]["vs_pytorch"] is None
    eager = next(row for row in rows if row["kernel"] == "softmax:torch")
    assert eager["status"] == "pass" and eager["correctness"] is True


def test_record_status_follows_the_variant_and_its_check():
    status = _script("report_results")._status

    def variant(state, passed):
        return {"status": state, "correctness": {"passed": passed}}

    assert status(variant("timed", True)) == "pass"
    assert status(variant("failed", False)) == "fail"
    assert status(variant("timed", None)) == "fail"  # timed unchecked: the validator rejects it
    assert status(variant("skipped", None)) == "skipped"
    assert status(variant("skipped", True)) == "skipped"


def _a_record() -> dict:
    return _script("report_results").records(_report("gemm-bf16.json"))[0]


@pytest.mark.parametrize(
    "change",
    [
        {"correctness": "pass"},
        {"status": "timed"},
        {"shape": [4096, 4096, 4096]},
        {"shape": "4096"},
        {"gbps": 12.0},  # a number for both: memory-bound and compute-bound at once
        {"status": "pass", "correctness": False},
        {"latency_us": None},  # untimed, yet with a TFLOP/s
        {"kernel": "matmul"},
        {"extra": 1},
    ],
)
def test_the_records_schema_rejects_a_wrong_record(change):
    record = {**_a_record(), **change}
    assert list(_validator().iter_errors([record])), change
    assert _script("report_results").record_problems([record])


def test_the_records_schema_uses_no_format():
    """Its validation hides jsonschema's format libraries (learning.report.validate)."""
    assert '"format"' not in RECORDS_SCHEMA.read_text()


def _main(*args):
    return _script("report_results").main([str(a) for a in args])


def _one_line_exit_2(code, capsys, *words):
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith("report_results: ") and all(w in err for w in words), err


@pytest.mark.parametrize(
    "damage, words",
    [
        (lambda r: [c.update(op="matmul_v9") for c in r["cases"]], ["matmul_v9", "bound"]),
        (lambda r: r["cases"][0].update(shape=[4096 * 4096]), ["shape", "16777216"]),
    ],
)
def test_records_that_would_not_fit_the_schema_write_nothing(damage, words, tmp_path, capsys):
    report = copy.deepcopy(_report("gemm-bf16.json"))
    damage(report)
    source = tmp_path / "bad.json"
    source.write_text(json.dumps(report))
    markdown, records = tmp_path / "r.md", tmp_path / "r.json"
    _one_line_exit_2(_main(source, "--output", markdown, "--records", records), capsys, *words)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json"]


def test_an_existing_records_file_is_replaced_only_with_force(tmp_path, capsys):
    markdown, records = tmp_path / "r.md", tmp_path / "r.json"
    records.write_text("kept\n")
    report = H200 / "gemm-bf16.json"
    _one_line_exit_2(_main(report, "--output", markdown, "--records", records), capsys, "--force")
    assert records.read_text() == "kept\n" and not markdown.exists()
    assert _main(report, "--output", markdown, "--records", records, "--force") == 0
    rows = json.loads(records.read_text())
    assert len(rows) == 12 and not list(_validator().iter_errors(rows))
    copied = tmp_path / "copied.json"
    copied.write_text(report.read_text())
    _one_line_exit_2(
        _main(copied, "--output", markdown, "--records", copied, "--force"), capsys, "itself"
    )
    assert copied.read_text() == report.read_text()


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
