"""Does validation catch every way a report can stop telling the truth?"""

from __future__ import annotations

import copy
import json

import pytest

import learning.report
from learning.report import __main__ as report_cli
from learning.report import create_snapshots, validate
from learning.report.fingerprint import sha256_file


@pytest.fixture
def report(cpu_run):
    return cpu_run().data


def test_a_cpu_run_validates_against_the_schema_file(report):
    assert learning.report.SCHEMA_PATH.name == "report-v2.json"
    assert validate(report) == []
    assert report["schema_version"] == 2
    for key in (
        "environment",
        "settings",
        "cases",
        "fingerprint",
        "gpu_utilization_percent",
        "warmup",
    ):
        assert key in report
    variant = report["cases"][0]["variants"][0]
    for key in ("median_ms", "samples_ms", "correctness", "logical_gbps", "ratio_vs_eager"):
        assert key in variant
    assert "max_abs_error" in variant["correctness"]


def _tampered(report, change):
    altered = copy.deepcopy(report)
    change(altered)
    return validate(altered)


def test_a_changed_sample_is_caught(report):
    def change(r):
        r["cases"][0]["variants"][1]["samples_ms"][0] *= 0.5

    problems = _tampered(report, change)
    assert problems and any("does not follow from samples_ms" in p for p in problems)


def test_a_changed_median_is_caught(report):
    def change(r):
        r["cases"][0]["variants"][1]["median_ms"] *= 0.9

    assert any("median_ms" in p for p in _tampered(report, change))


def test_a_changed_ratio_or_bandwidth_is_caught(report):
    def ratio(r):
        r["cases"][0]["variants"][1]["ratio_vs_eager"] = 2.0

    def bandwidth(r):
        r["cases"][0]["variants"][1]["logical_gbps"] *= 3

    assert any("ratio_vs_eager" in p for p in _tampered(report, ratio))
    assert any("logical_gbps" in p for p in _tampered(report, bandwidth))


def test_a_changed_hash_is_caught(report):
    def change(r):
        path = next(iter(r["fingerprint"]["files"]))
        r["fingerprint"]["files"][path] = "0" * 64

    assert any("changed since the run" in p for p in _tampered(report, change))


def test_timings_on_a_failed_variant_are_caught(report):
    def change(r):
        r["cases"][0]["variants"][1]["status"] = "failed"

    assert _tampered(report, change)


def test_an_unknown_schema_version_is_rejected(report):
    def change(r):
        r["schema_version"] = 3

    assert _tampered(report, change) == ["unsupported schema_version 3; this validator reads 2"]


def test_compile_mode_is_an_optional_setting_of_two_values(report):
    """Reports made before --compile-mode existed have no compile_mode; they still validate."""
    assert report["settings"]["compile_mode"] == "default"
    assert _tampered(report, lambda r: r["settings"].pop("compile_mode")) == []
    assert _tampered(report, lambda r: r["settings"].update(compile_mode="max-autotune")) == []
    problems = _tampered(report, lambda r: r["settings"].update(compile_mode="reduce-overhead"))
    assert problems and all(p.startswith("schema: settings/compile_mode") for p in problems)


def test_a_missing_key_is_a_schema_problem(report):
    def change(r):
        del r["cases"][0]["variants"][0]["median_ms"]

    problems = _tampered(report, change)
    assert problems and all(p.startswith("schema:") for p in problems)


def test_the_command_line_exit_status(report, tmp_path, capsys):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(report))
    assert report_cli.main(["validate", str(good)]) == 0
    bad_report = copy.deepcopy(report)
    bad_report["cases"][0]["variants"][0]["samples_ms"][0] += 1.0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(bad_report))
    capsys.readouterr()
    assert report_cli.main(["validate", str(good), str(bad)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("valid") and all(line.startswith(str(bad)) for line in out[1:])
    (tmp_path / "junk.json").write_text("{not json")
    assert report_cli.main(["validate", str(tmp_path / "junk.json")]) == 1


# --------------------------------------------------------------------------- snapshots


@pytest.fixture
def small_repo(tmp_path, report):
    """A report whose fingerprint points at one kernel file in a scratch repository."""
    root = tmp_path / "repo"
    kernel = root / "reference" / "kernels" / "softmax.py"
    kernel.parent.mkdir(parents=True)
    kernel.write_text("def softmax(x):\n    return x\n")
    altered = copy.deepcopy(report)
    altered["fingerprint"]["files"] = {"reference/kernels/softmax.py": sha256_file(kernel)}
    return root, kernel, altered


def test_an_edited_file_without_a_snapshot_is_invalid(small_repo):
    root, kernel, report = small_repo
    assert validate(report, root) == []
    kernel.write_text("def softmax(x):\n    return x * 2  # edited after the run\n")
    assert any("changed since the run" in p for p in validate(report, root))


def test_an_edited_file_with_a_valid_snapshot_validates(small_repo):
    root, kernel, report = small_repo
    snapshots, problems = create_snapshots(report, root)
    assert problems == []
    report["source_snapshots"] = snapshots
    name = snapshots["reference/kernels/softmax.py"]
    assert name.startswith("results/snapshots/") and (root / name).is_file()
    kernel.write_text("def softmax(x):\n    return x * 2  # edited after the run\n")
    assert validate(report, root) == []


def test_a_swapped_snapshot_is_invalid(small_repo):
    root, kernel, report = small_repo
    report["source_snapshots"], _ = create_snapshots(report, root)
    (root / report["source_snapshots"]["reference/kernels/softmax.py"]).write_text("swapped\n")
    assert any("does not hold the measured source" in p for p in validate(report, root))


def test_a_file_already_edited_cannot_be_snapshotted(small_repo):
    root, kernel, report = small_repo
    kernel.write_text("edited\n")
    snapshots, problems = create_snapshots(report, root)
    assert snapshots == {} and "changed since the run" in problems[0]
