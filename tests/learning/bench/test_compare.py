"""Does ``kernel-bench compare`` give each pair the verdict its samples support, refuse what
cannot be compared in one line, and leave ``kernel-bench``'s runs as they were?

The reports are real CPU reports from one small run; where a test needs samples of a known
spread (a CPU timing of a tiny kernel wanders by more than any margin), it replaces them.
"""

from __future__ import annotations

import copy
import json
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
import warm_python

from learning.bench import compare, entry
from learning.report import REPO_ROOT, schema_problems
from learning.report.stats import paired

SCALED_CASE = ("softmax", [4, 8])


@pytest.fixture(scope="module")
def cpu_report(tmp_path_factory) -> dict:
    """One kernel-bench CPU run: softmax at two shapes, torch and triton, 12 rounds."""
    from learning.bench import BenchConfig, run

    output = tmp_path_factory.mktemp("cpu") / "softmax-cpu.json"
    config = BenchConfig(op="softmax", output=output, shapes=((4, 8), (3, 5)),
                         dtype="float32", samples=12, visits=3, device="cpu",
                         quiet=True)  # fmt: skip
    run(config)
    report = json.loads(output.read_text())
    assert [v["status"] for c in report["cases"] for v in c["variants"]] == ["timed"] * 4
    return report


def _set_samples(variant: dict, samples) -> None:
    samples = [float(s) for s in samples]
    variant["samples_ms"] = samples
    variant.update(median_ms=float(np.median(samples)), min_ms=min(samples), max_ms=max(samples))


def steady(report: dict, spread: float = 0.002, seed: int = 1) -> dict:
    """A copy whose every variant has samples within ``spread`` of a fixed time."""
    steady_report = copy.deepcopy(report)
    rng = np.random.default_rng(seed)
    for number, case in enumerate(steady_report["cases"]):
        for variant in case["variants"]:
            centre = 0.1 * (number + 1) * (2 if variant["kind"] == "triton" else 1)
            count = len(variant["samples_ms"])
            _set_samples(variant, centre * (1 + spread * rng.standard_normal(count)))
    return steady_report


def variant_of(report: dict, op: str, shape: list, name: str) -> dict:
    case = next(c for c in report["cases"] if c["op"] == op and c["shape"] == shape)
    return next(v for v in case["variants"] if v["name"] == name)


def scaled(report: dict, factor: float, noise: float = 0.0, seed: int = 2) -> dict:
    """A copy with the triton samples of one case scaled (and, with ``noise``, spread)."""
    doctored = copy.deepcopy(report)
    variant = variant_of(doctored, *SCALED_CASE, "triton")
    samples = np.asarray(variant["samples_ms"]) * factor
    spread = 1 + noise * np.random.default_rng(seed).standard_normal(len(samples))
    _set_samples(variant, samples * spread)
    return doctored


def write(tmp_path: Path, name: str, report: dict) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(report))
    return path


def run_compare(capsys, *arguments) -> tuple[int, str, str]:
    code = compare.main([str(a) for a in arguments])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def pairs_by_name(comparison: dict) -> dict:
    return {(row["case"], row["variant"]): row for row in comparison["pairs"]}


# --------------------------------------------------------------------------- the verdicts


def test_the_verdict_rule_holds_the_whole_interval_against_the_margin():
    assert compare.verdict((0.99, 1.01)) == "same"
    assert compare.verdict((1 / 1.02, 1.02)) == "same"  # the margin's edges are inside it
    assert compare.verdict((1.021, 1.2)) == "slower"
    assert compare.verdict((0.8, 0.979)) == "faster"
    assert compare.verdict((0.99, 1.03)) == "ambiguous"
    assert compare.verdict((0.97, 1.03)) == "ambiguous"
    assert compare.verdict((1.01, 1.05), margin=0.10) == "same"
    # the margin is the same either way round: BASE against NEW mirrors NEW against BASE
    for low, high in ((1.021, 1.03), (0.97, 0.98), (0.985, 1.015), (0.95, 1.01)):
        mirrored = compare.verdict((1 / high, 1 / low))
        expected = {"slower": "faster", "faster": "slower"}.get(compare.verdict((low, high)))
        assert mirrored == (expected or compare.verdict((low, high)))


def test_a_report_against_itself_is_the_same_everywhere(cpu_report, tmp_path, capsys):
    path = write(tmp_path, "base.json", steady(cpu_report))
    code, out, err = run_compare(capsys, path, path)
    assert (code, err) == (0, "")
    comparison = compare.compare_reports(json.loads(path.read_text()), json.loads(path.read_text()))
    assert [row["verdict"] for row in comparison["pairs"]] == ["same"] * 4
    assert all(row["ratio"] == 1.0 for row in comparison["pairs"])
    assert "0 faster, 0 slower, 4 same, 0 ambiguous; 0 not compared" in out


def test_samples_one_and_a_half_times_as_long_are_slower(cpu_report, tmp_path, capsys):
    base, new = steady(cpu_report), scaled(steady(cpu_report), 1.5)
    for hashes in new["fingerprint"].values():  # what a change to the kernel's file leaves
        if isinstance(hashes, dict):
            hashes["reference/kernels/softmax.py"] = "0" * 64
    new_path = write(tmp_path, "new.json", new)
    base_path = write(tmp_path, "base.json", base)
    json_path = tmp_path / "comparison.json"
    code, out, _ = run_compare(capsys, base_path, new_path, "--json", json_path)
    assert code == 1
    rows = pairs_by_name(json.loads(json_path.read_text()))
    slower = rows[("softmax 4x8 float32", "triton")]
    assert slower["verdict"] == "slower"
    assert slower["ratio"] == pytest.approx(1.5)
    assert slower["interval"][0] <= 1.5 <= slower["interval"][1]
    assert [r["verdict"] for key, r in rows.items() if r is not slower] == ["same"] * 3
    line = next(line for line in out.splitlines() if "triton" in line and "slower" in line)
    assert "1.500" in line
    assert "0 faster, 1 slower, 3 same" in out
    assert "code that differs between the runs: reference/kernels/softmax.py" in out


def test_samples_half_as_long_are_faster_and_exit_0(cpu_report, tmp_path, capsys):
    base = steady(cpu_report)
    code, out, _ = run_compare(
        capsys, write(tmp_path, "base.json", base), write(tmp_path, "new.json", scaled(base, 0.5))
    )
    assert code == 0
    assert "1 faster, 0 slower, 3 same" in out
    row = pairs_by_name(compare.compare_reports(base, scaled(base, 0.5)))
    assert row[("softmax 4x8 float32", "triton")]["verdict"] == "faster"


def test_an_interval_across_the_margin_is_ambiguous(cpu_report):
    base = steady(cpu_report)
    noisy = scaled(base, 1.02, noise=0.08)
    row = pairs_by_name(compare.compare_reports(base, noisy))[("softmax 4x8 float32", "triton")]
    low, high = row["interval"]
    assert low < 1.02 < high  # the run cannot tell a 2% difference from none
    assert row["verdict"] == "ambiguous"
    # and with a margin the noise stays inside, the same samples are the same
    wide = compare.compare_reports(base, noisy, margin=0.5)
    assert pairs_by_name(wide)[("softmax 4x8 float32", "triton")]["verdict"] == "same"


def in_visits(report: dict, visits: int) -> dict:
    """The same samples, read as taken in ``visits`` visits (of equal rounds)."""
    regrouped = copy.deepcopy(report)
    settings = regrouped["settings"]
    settings.update(visits=visits, rounds_per_visit=settings["samples"] // visits)
    return regrouped


def test_the_intervals_are_reproducible_and_each_pair_its_own(cpu_report):
    """Read as one round a visit: resampling three visits can give only a few medians, and
    every seed's interval then ends on the same ones."""
    base = in_visits(steady(cpu_report), 12)
    new = in_visits(scaled(steady(cpu_report), 1.01, noise=0.02), 12)
    first, again = compare.compare_reports(base, new), compare.compare_reports(base, new)
    assert first == again
    other_seed = compare.compare_reports(base, new, seed=1)
    assert first["pairs"][0]["interval"] != other_seed["pairs"][0]["interval"]
    fewer = copy.deepcopy(new)
    fewer["cases"] = [c for c in fewer["cases"] if c["shape"] == SCALED_CASE[1]]
    kept = pairs_by_name(compare.compare_reports(base, fewer))
    for key, row in kept.items():
        assert row["interval"] == pairs_by_name(first)[key]["interval"]


# --------------------------------------------------------------------------- what is listed


def test_failed_variants_and_one_sided_cases_are_listed_not_compared(cpu_report, tmp_path, capsys):
    base, new = steady(cpu_report), steady(cpu_report)
    failed = variant_of(new, *SCALED_CASE, "triton")
    failed.update(status="failed", reason="outside the tolerance", samples_ms=[], median_ms=None)
    other = next(c for c in new["cases"] if c["shape"] != SCALED_CASE[1])
    other["variants"] = [v for v in other["variants"] if v["name"] != "triton"]
    base["cases"].append({**copy.deepcopy(base["cases"][0]), "shape": [2, 2]})
    code, out, _ = run_compare(capsys, write(tmp_path, "b.json", base),
                               write(tmp_path, "n.json", new))  # fmt: skip
    assert code == 0
    row = pairs_by_name(compare.compare_reports(base, new))[("softmax 4x8 float32", "triton")]
    assert row["verdict"] is None
    assert row["not_compared"] == "failed in NEW: outside the tolerance"
    assert "failed in NEW: outside the tolerance" in out
    assert "only in BASE: softmax 3x5 float32 triton" in out
    assert "only in BASE: softmax 2x2 float32" in out
    assert "2 same, 0 ambiguous; 1 not compared" in out


def test_too_few_samples_are_not_compared(cpu_report):
    base = steady(cpu_report)
    short = copy.deepcopy(base)
    _set_samples(variant_of(short, *SCALED_CASE, "torch"), [0.1, 0.1, 0.1])
    row = pairs_by_name(compare.compare_reports(base, short))[("softmax 4x8 float32", "torch")]
    assert row["verdict"] is None and row["not_compared"].startswith("too few samples in NEW")


# --------------------------------------------------------------------------- refusals


def test_a_different_timing_mode_is_refused_unless_allowed(cpu_report, tmp_path, capsys):
    base = steady(cpu_report)
    events = copy.deepcopy(base)
    events["settings"]["timing"] = "events"
    assert schema_problems(events) == []
    paths = write(tmp_path, "b.json", base), write(tmp_path, "n.json", events)
    code, out, err = run_compare(capsys, *paths, "--json", tmp_path / "c.json")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("kernel-bench compare: error:")
    assert "timing: cpu-interpreter in BASE, events in NEW" in err
    assert not (tmp_path / "c.json").exists()
    code, out, err = run_compare(capsys, *paths, "--allow-mismatch")
    assert code == 0
    assert "warning: measured differently: timing" in err
    assert "4 same" in out


@pytest.mark.parametrize("problem", ["missing", "not json", "version 1", "a record", "no case"])
def test_bad_input_is_one_line_and_writes_nothing(problem, cpu_report, tmp_path, capsys):
    good = write(tmp_path, "good.json", steady(cpu_report))
    bad = tmp_path / "bad.json"
    if problem == "not json":
        bad.write_text('{"schema_version": 2, "cases": [')
    elif problem == "version 1":
        bad.write_text(json.dumps({**cpu_report, "schema_version": 1}))
    elif problem == "a record":
        bad.write_text(json.dumps({"record": "script-output", "record_version": 1}))
    elif problem == "no case":
        other = steady(cpu_report)
        for case in other["cases"]:
            case["dtype"] = "float16"
        bad.write_text(json.dumps(other))
    output = tmp_path / "out.json"
    code, out, err = run_compare(capsys, good, bad, "--json", output)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("kernel-bench compare: error:")
    expected = {"missing": "no such file", "not json": "not JSON",
                "version 1": "not a schema-v2 kernel-bench report", "a record": "script record",
                "no case": "no case (op, shape, dtype) in common"}[problem]  # fmt: skip
    assert expected in err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["good.json"] + ([] if problem == "missing" else ["bad.json"])
    )


def test_bad_command_lines_are_one_line(cpu_report, tmp_path, capsys):
    good = write(tmp_path, "good.json", steady(cpu_report))
    for arguments in ([good], [good, good, good], ["--within", good, good],
                      [good, good, "--margin", "-1"], [good, good, "--margin", "nan"],
                      [good, good, "--json", tmp_path / "no-folder" / "c.json"],
                      [good, good, "--unknown"]):  # fmt: skip
        code, out, err = run_compare(capsys, *arguments)
        assert (code, out, err.count("\n")) == (2, "", 1), arguments


def test_json_is_never_overwritten_without_force(cpu_report, tmp_path, capsys):
    base_path = write(tmp_path, "b.json", steady(cpu_report))
    new_path = write(tmp_path, "n.json", scaled(steady(cpu_report), 0.5))
    output = tmp_path / "comparison.json"
    output.write_text("evidence\n")
    code, out, err = run_compare(capsys, base_path, new_path, "--json", output)
    assert (code, out) == (2, "")
    assert "already exists; pass --force" in err and err.count("\n") == 1
    assert output.read_text() == "evidence\n"
    code, _, err = run_compare(capsys, base_path, new_path, "--json", output, "--force")
    assert code == 0 and f"wrote {output}" in err
    written = json.loads(output.read_text())
    assert (written["base"], written["new"]) == (str(base_path), str(new_path))
    assert written["summary"] == {"faster": 1, "slower": 0, "same": 3, "ambiguous": 0,
                                  "not_compared": 0}  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.json", "comparison.json", "n.json"]


# --------------------------------------------------------------------------- within one report


def drifting(report: dict, ratio: float) -> dict:
    """A copy whose rounds drift by up to 30% together, the triton variant ``ratio`` times
    eager's time in every round (a 0.2% wobble on top)."""
    doctored = copy.deepcopy(report)
    rng = np.random.default_rng(3)
    for case in doctored["cases"]:
        eager, triton = case["variants"]
        drift = 1 + 0.3 * rng.random(len(eager["samples_ms"]))
        _set_samples(eager, 0.1 * drift)
        wobble = 1 + 0.002 * rng.standard_normal(len(drift))
        _set_samples(triton, 0.1 * drift * ratio * wobble)
        triton["paired_vs_eager"] = paired(triton, eager)
    return doctored


def test_within_pairs_rounds_so_drift_between_them_cancels(cpu_report, tmp_path, capsys):
    report = drifting(cpu_report, 1.05)
    within = compare.within_report(report)
    for row in within["pairs"]:
        assert row["verdict"] == "slower"
        triton = variant_of(report, row["op"], row["shape"], "triton")
        assert row["paired_ratio"] == triton["paired_vs_eager"]["paired_ratio"]
        low, high = row["paired_ratio_ci"]
        assert low <= row["paired_ratio"] <= high < 1 / 1.02
        assert row["paired_ratio"] == pytest.approx(1 / 1.05, rel=0.005)
    # the same samples unpaired: the drift swamps the 5%
    eager, triton = report["cases"][0]["variants"]
    unpaired = compare.ratio_interval(eager["samples_ms"], triton["samples_ms"],
                                      rng=compare.generator(0, "unpaired"))  # fmt: skip
    assert compare.verdict(unpaired["interval"]) == "ambiguous"
    code, out, _ = run_compare(capsys, "--within", write(tmp_path, "r.json", report))
    assert code == 0  # one run described: no regression to report
    assert "0 faster, 2 slower" in out
    failed = variant_of(report, *SCALED_CASE, "triton")
    failed.update(status="skipped", reason="interrupted", samples_ms=[], paired_vs_eager=None)
    output = tmp_path / "within.json"
    code, out, _ = run_compare(capsys, "--within", write(tmp_path, "r.json", report),
                               "--json", output)  # fmt: skip
    assert code == 0 and "skipped in this report: interrupted" in out
    written = json.loads(output.read_text())
    assert written["summary"] == {"faster": 0, "slower": 1, "same": 0, "ambiguous": 0,
                                  "not_compared": 1}  # fmt: skip
    assert written["report"] == str(tmp_path / "r.json")


def test_paired_verdict_keeps_the_reports_paired_ratio(cpu_report):
    report = drifting(cpu_report, 0.8)
    eager, triton = report["cases"][0]["variants"]
    result = compare.paired_verdict(triton, eager)
    assert {k: result[k] for k in ("paired_ratio", "slower", "rounds", "p")} == paired(
        triton, eager
    )
    assert result["verdict"] == "faster" and result["margin"] == compare.MARGIN
    assert set(result) == {"paired_ratio", "slower", "rounds", "p", "paired_ratio_ci", "verdict",
                           "margin", "excluded_rounds", "interval_unit",
                           "interval_units"}  # fmt: skip
    assert result["excluded_rounds"] == 0
    same = drifting(cpu_report, 1.0)
    assert compare.paired_verdict(*reversed(same["cases"][0]["variants"]))["verdict"] == "same"
    _set_samples(triton, triton["samples_ms"][:-1])
    assert compare.paired_verdict(triton, eager) is None  # unequal counts: no pairs


# --------------------------------------------------------------------------- the entry point


def test_the_console_script_is_the_entry():
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["scripts"]["kernel-bench"] == "learning.bench.entry:main"


def test_the_entry_hands_a_run_its_arguments_unchanged(monkeypatch):
    seen = []
    monkeypatch.setattr("learning.bench.cli.main", lambda argv=None: seen.append(argv) or 7)
    monkeypatch.setattr(compare, "main", lambda argv: seen.append(("compare", argv)) or 5)
    arguments = ["--op", "softmax", "--device", "cpu", "--output", "x.json"]
    assert entry.main(arguments) == 7 and seen[-1] is arguments
    assert entry.main(None) == 7 and seen[-1] is None  # argparse reads sys.argv itself
    assert entry.main(["--op", "compare", "--output", "x.json"]) == 7  # only a first "compare"
    assert entry.main(["compare", "a.json", "b.json"]) == 5
    assert seen[-1] == ("compare", ["a.json", "b.json"])


def test_a_cpu_run_through_the_entry_behaves_as_before(tmp_path):
    output = tmp_path / "softmax-cpu.json"
    arguments = ["--op", "softmax", "--device", "cpu", "--shape", "4", "8", "--dtype",
                 "float32", "--samples", "3", "--visits", "1", "--output", str(output)]  # fmt: skip
    command = [sys.executable, "-c",
               "import sys; from learning.bench.entry import main; sys.exit(main())"]  # fmt: skip
    done = warm_python.run([*command, *arguments], capture_output=True, text=True,
                           cwd=REPO_ROOT, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"kernel-bench: wrote {output}" in done.stderr
    report = json.loads(output.read_text())
    settings = report["settings"]
    assert (settings["op"], settings["shapes"], settings["samples"]) == ("softmax", [[4, 8]], 3)
    assert settings["output"] == str(output)
    files = report["fingerprint"]["files"]
    assert "learning/bench/cli.py" in files and "learning/bench/compare.py" not in files
    before = output.read_bytes()
    again = warm_python.run([*command, *arguments], capture_output=True, text=True,
                            cwd=REPO_ROOT, timeout=300)  # fmt: skip
    assert again.returncode == 2 and "already exists" in again.stderr
    assert again.stderr.count("\n") == 1 and output.read_bytes() == before


def test_within_gives_the_verdicts_a_recorded_h200_report_keeps():
    """A report with throttled rounds (results/h200/all.json): --within leaves out the rounds
    its verdicts left out, so each pair reads as the report itself judged it."""
    recorded_path = Path(__file__).resolve().parents[3] / "results" / "h200" / "all.json"
    report = json.loads(recorded_path.read_text())
    assert report["telemetry"]["excluded_rounds"] > 0, "the recording has throttled rounds"
    rows = {(row["case"], row["variant"]): row for row in compare.within_report(report)["pairs"]}
    compared = 0
    for case in report["cases"][:12]:
        label = compare.case_label(case)
        for variant in case["variants"]:
            recorded = variant.get("paired_vs_eager")
            if recorded and recorded["paired_ratio_ci"] is not None:
                row = rows[(label, variant["name"])]
                assert row["verdict"] == recorded["verdict"], (label, variant["name"])
                assert row["excluded_rounds"] == recorded["excluded_rounds"]
                compared += 1
    assert compared > 10


# ------------------------------------------------------------- what must agree, what is named


def _compiled(report: dict, mode: str | None) -> dict:
    altered = copy.deepcopy(report)
    altered["settings"].update(compile=mode is not None, compile_mode=mode or "default")
    return altered


@pytest.mark.parametrize(
    "change, named",
    [(lambda r: r["settings"].update(iterations=30), "iterations: 1 in BASE, 30 in NEW"),
     (lambda r: r.update(_compiled(r, "max-autotune")),
      "compile_mode: default in BASE, max-autotune in NEW")],
    ids=["calls per sample", "compile mode"],
)  # fmt: skip
def test_what_a_sample_is_must_agree(change, named, cpu_report, tmp_path, capsys):
    base = _compiled(steady(cpu_report), "default")
    new = copy.deepcopy(base)
    change(new)
    paths = write(tmp_path, "b.json", base), write(tmp_path, "n.json", new)
    code, out, err = run_compare(capsys, *paths)
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert named in err and "pass --allow-mismatch" in err
    code, out, err = run_compare(capsys, *paths, "--allow-mismatch")
    assert code == 0 and f"warning: measured differently: {named}" in err
    if named.startswith("compile_mode"):  # only where both compiled: else no compile variant
        uncompiled = _compiled(new, None)
        assert compare.mismatched_settings(uncompiled, new) == []
        assert compare.mismatched_settings(base, uncompiled) == []


def test_samples_and_versions_may_differ_and_are_named(cpu_report, tmp_path, capsys):
    base = steady(cpu_report)
    new = copy.deepcopy(base)
    new["settings"].update(samples=9, visits=3, rounds_per_visit=3)
    for case in new["cases"]:
        for variant in case["variants"]:
            _set_samples(variant, variant["samples_ms"][:9])
    new["environment"].update(torch="9.9.9", triton="0.0.1")
    json_path = tmp_path / "c.json"
    code, out, err = run_compare(capsys, write(tmp_path, "b.json", base),
                                 write(tmp_path, "n.json", new), "--json", json_path)  # fmt: skip
    assert code == 0 and "warning" not in err
    noted = [
        "samples: 12 in BASE, 9 in NEW",
        f"torch: {base['environment']['torch']} in BASE, 9.9.9 in NEW",
        f"triton: {base['environment']['triton']} in BASE, 0.0.1 in NEW",
    ]
    assert json.loads(json_path.read_text())["noted_differences"] == noted
    for line in noted:
        assert f"differs between the runs: {line}" in out.splitlines()


def test_a_margin_kernel_bench_refuses_is_refused_in_its_words(cpu_report, tmp_path, capsys):
    from learning.bench import cli

    good = write(tmp_path, "good.json", steady(cpu_report))
    for margin in ("0", "-1", "100", "nan"):
        assert cli.main(["--op", "softmax", "--margin", margin, "--output",
                         str(tmp_path / "x.json")]) == 2  # fmt: skip
        refused = capsys.readouterr().err.removeprefix("kernel-bench: error: ")
        code, out, err = run_compare(capsys, good, good, "--margin", margin)
        assert (code, out) == (2, "") and err == f"kernel-bench compare: error: {refused}"


@pytest.mark.parametrize("problem", ["too large", "nested too deep", "NaN", "a key twice"])
def test_a_file_that_cannot_be_a_report_is_one_line(problem, cpu_report, tmp_path, capsys):
    from learning.report.validate import MAX_NESTING, MAX_REPORT_BYTES

    report = steady(cpu_report)
    good = write(tmp_path, "good.json", report)
    text = json.dumps(report)
    if problem == "too large":
        report["warnings"].append("")
        text = json.dumps(report)
        report["warnings"][-1] = "x" * (MAX_REPORT_BYTES + 1 - len(text))
        text = json.dumps(report)
    elif problem == "nested too deep":
        levels = MAX_NESTING - 1  # numerics_policy is level 2
        text = text.replace('"numerics_policy": {', '"numerics_policy": {"x": '
                            + "[" * levels + "]" * levels + ", ", 1)  # fmt: skip
    elif problem == "NaN":
        text = text.replace('"median_ms": ', '"median_ms": NaN, "_": ', 1)
    else:
        text = text.replace('"complete": true', '"complete": true, "complete": true', 1)
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    code, out, err = run_compare(capsys, good, bad)
    assert (code, out) == (2, "") and err.count("\n") == 1
    said = {"too large": "larger than 20 MB (MAX_REPORT_BYTES)",
            "nested too deep": f"nested deeper than {MAX_NESTING} levels",
            "NaN": "not JSON (NaN is not a JSON number)",
            "a key twice": "the key 'complete' appears twice"}[problem]  # fmt: skip
    assert err.startswith(f"kernel-bench compare: error: NEW {bad}: ") and said in err, err


def test_a_run_of_one_visit_is_not_compared(cpu_report):
    """One visit shows nothing of the drift between visits: its interval would be too narrow."""
    base, one = steady(cpu_report), in_visits(steady(cpu_report), 1)
    rows = compare.compare_reports(base, one)["pairs"]
    assert [row["verdict"] for row in rows] == [None] * 4
    assert all(row["not_compared"].startswith("one visit in NEW") for row in rows)


def test_kernel_bench_refuses_to_start_without_scipy(tmp_path, monkeypatch):
    """The verdicts need scipy: a machine without it is told before anything is measured."""
    import importlib.util

    from learning.bench import config as config_module

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "scipy" else real(name, *a))  # fmt: skip
    config = config_module.BenchConfig(op="add", output=tmp_path / "r.json")
    with pytest.raises(config_module.BenchInputError, match="scipy is not installed"):
        config_module.precheck(config)
