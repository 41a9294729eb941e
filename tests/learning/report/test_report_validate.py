"""Does validation catch every way a report can stop telling the truth?"""

from __future__ import annotations

import copy
import json

import pytest

import learning.report
from learning.report import __main__ as report_cli
from learning.report import consistency_problems, create_snapshots, schema_problems, validate
from learning.report.fingerprint import REPO_ROOT, file_hashes

RECORDED = REPO_ROOT / "results" / "h200"


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


def _set_paired(variant, alter):
    """Give variant ``variant`` of the first case ``alter(triton's paired_vs_eager)``."""

    def change(r):
        triton = copy.deepcopy(r["cases"][0]["variants"][1]["paired_vs_eager"])
        r["cases"][0]["variants"][variant]["paired_vs_eager"] = alter(triton)

    return change


@pytest.mark.parametrize(
    "change",
    [
        _set_paired(1, lambda c: c | {"paired_ratio": c["paired_ratio"] * 1.01}),
        _set_paired(1, lambda c: c | {"slower": c["slower"] + 1, "rounds": c["rounds"] + 1}),
        _set_paired(1, lambda c: c | {"p": 0.01}),  # 2 rounds never give less than 0.5
        _set_paired(1, lambda c: None),  # a comparison the samples give, recorded as none
        _set_paired(0, lambda c: c),  # eager compared with itself
    ],
    ids=["ratio", "rounds", "p", "erased", "on eager"],
)
def test_a_changed_paired_comparison_is_caught(report, change):
    """paired_vs_eager is re-derived from the two variants' samples, like every ratio."""
    original = report["cases"][0]["variants"][1]["paired_vs_eager"]
    assert original is not None and original["rounds"] <= 2, "the CPU run pairs its 2 rounds"
    problems = _tampered(report, change)
    assert len(problems) == 1 and "paired_vs_eager" in problems[0], problems
    assert "round by round" in problems[0] and "\n" not in problems[0]


def test_a_paired_comparison_of_the_wrong_shape_is_a_schema_problem(report):
    for alter in (lambda c: c | {"p": 1.5}, lambda c: c | {"extra": 1}, lambda c: {}):
        change = _set_paired(1, alter)
        problems = _tampered(report, change)
        assert problems and all(p.startswith("schema: cases/0/variants/1/paired_vs_eager") for
                                p in problems), problems  # fmt: skip


def test_a_report_made_before_paired_vs_eager_still_validates(report):
    """The field is optional and additive within schema version 2."""

    def change(r):
        del r["settings"]["margin"], r["telemetry"]  # nor the verdicts recorded since
        for variant in r["cases"][0]["variants"] + r["cases"][1]["variants"]:
            del variant["paired_vs_eager"]
            variant.pop("paired_vs", None)

    assert _tampered(report, change) == []


def test_the_recorded_reports_follow_todays_schema_and_figures():
    """Does every recorded report (results/h200/, most made before paired_vs_eager existed)
    pass today's schema and consistency checks? Their fingerprints are tests/results' question:
    an engine change makes those stale until the reports are re-recorded on the GPU."""
    checked = 0
    for path in sorted(RECORDED.glob("*.json")):
        data = json.loads(path.read_text())
        if "schema_version" not in data:
            continue  # a script record: no figures to re-derive
        problems = schema_problems(data) or consistency_problems(data)
        assert problems == [], f"{path.name}: " + "\n".join(problems)
        checked += 1
    assert checked, f"no recorded reports in {RECORDED}"


def test_a_changed_hash_is_caught(report):
    """The normalised hash is the file's identity (a docstring edit leaves it): one that no
    longer belongs to the file whose raw hash still matches is an altered report; in a report
    without normalised hashes, a changed raw hash is a changed file."""

    def change(r):
        path = next(iter(r["fingerprint"]["normalized"]))
        r["fingerprint"]["normalized"][path] = "0" * 64

    assert any("the report was altered" in p for p in _tampered(report, change))

    def change_raw_only(r):
        del r["fingerprint"]["normalized"]
        path = next(iter(r["fingerprint"]["files"]))
        r["fingerprint"]["files"][path] = "0" * 64

    assert any("changed since the run" in p for p in _tampered(report, change_raw_only))


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
    assert report_cli.main(["validate", str(good), str(bad)]) == 2
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("valid") and all(line.startswith(str(bad)) for line in out[1:])
    (tmp_path / "junk.json").write_text("{not json")
    assert report_cli.main(["validate", str(tmp_path / "junk.json")]) == 2


# --------------------------------------------------------------------------- snapshots


@pytest.fixture
def small_repo(tmp_path, report):
    """A report whose fingerprint points at one kernel file in a scratch repository."""
    root = tmp_path / "repo"
    kernel = root / "reference" / "kernels" / "softmax.py"
    kernel.parent.mkdir(parents=True)
    kernel.write_text("def softmax(x):\n    return x\n")
    altered = copy.deepcopy(report)
    raw, normalized = file_hashes(kernel)
    altered["fingerprint"]["files"] = {"reference/kernels/softmax.py": raw}
    altered["fingerprint"]["normalized"] = {"reference/kernels/softmax.py": normalized}
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
