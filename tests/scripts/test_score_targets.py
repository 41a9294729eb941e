"""Does scripts/score_targets.py score the "every case" target as its docstring says?"""

import json
import sys
from pathlib import Path

import warm_python

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
sys.path.insert(0, str(SCRIPTS))

import score_targets  # noqa: E402


def _variant(name, median_us, low_us, high_us):
    return {"name": name, "median_ms": median_us / 1e3, "min_ms": low_us / 1e3,
            "max_ms": high_us / 1e3}  # fmt: skip


def _case(op, variants, logical_bytes=8 * 2**20):
    return {"op": op, "shape": [1024, 4096], "dtype": "float16",
            "logical_bytes": logical_bytes, "variants": variants}  # fmt: skip


def test_cases_behind_are_told_apart_by_their_samples_and_the_gemm_is_left_out():
    report = {"cases": [
        _case("add", [_variant("torch", 10, 9, 11), _variant("triton", 9, 8, 10)]),  # met
        _case("sum", [_variant("torch", 10, 9.9, 10.1), _variant("compile", 9, 8.9, 9.1),
                      _variant("triton", 9.1, 9.0, 9.3)]),  # behind compile, samples overlap
        _case("max", [_variant("torch", 10, 9.9, 10.1), _variant("triton", 11, 10.5, 11.5)]),
        _case("matmul", [_variant("torch", 1, 1, 1), _variant("triton", 2, 2, 2)]),
    ]}  # fmt: skip
    behind, scored = score_targets.score(report, ceiling_gbps=4350.0)
    assert scored == 3
    assert [(row["case"].split()[0], row["baseline"], row["overlap"]) for row in behind] == [
        ("sum", "compile", True), ("max", "torch", False)
    ]
    max_row = behind[1]
    assert abs(max_row["ratio"] - 10 / 11) < 1e-12
    assert abs(max_row["of_ceiling"] - 8 * 2**20 / 11e-6 / 1e9 / 4350.0) < 1e-12


def test_the_paired_statistics_are_the_engines():
    """The sign test and the pairing live in learning.report.stats (tests/learning/report/
    test_stats.py); score_targets uses them, as the probes' paired rows do
    (scripts/_paired_rows.py)."""
    from learning.report import stats

    assert score_targets.paired is stats.paired
    assert not hasattr(score_targets, "sign_test_p"), "a second copy of the sign test"


def _sampled(name, samples_us):
    return {"name": name, "samples_ms": [t / 1e3 for t in samples_us]}


def test_pairs_are_rounds_and_a_steady_small_loss_is_told_from_noise():
    # two clock states: the medians overlap, but the reference is 1% slower in every round
    fast, slow = [100.0] * 3, [120.0] * 6
    baseline = _sampled("compile", fast + slow)
    steady = score_targets.paired(_sampled("triton", [t * 1.01 for t in fast + slow]), baseline)
    assert steady["slower"] == 9 and steady["rounds"] == 9
    assert abs(steady["paired_ratio"] - 1 / 1.01) < 1e-12
    assert steady["p"] < score_targets.SIGNIFICANT
    mixed = score_targets.paired(_sampled("triton", [101, 99, 101] + [119, 121] * 3), baseline)
    assert mixed["slower"] == 5 and mixed["p"] == 1.0
    assert mixed["rounds"] == 9
    # faster in every round (a case can be behind by its medians and still do this): as
    # lopsided a sign test, the other way
    winning = score_targets.paired(_sampled("triton", [99] * 3 + [119] * 6), baseline)
    assert winning["slower"] == 0 and winning["p"] < score_targets.SIGNIFICANT
    rows = [{"paired": steady}, {"paired": winning}, {"paired": mixed}, {"paired": None}]
    assert [score_targets._significant(row) for row in rows] == [True, False, False, False]
    assert score_targets.paired(_sampled("triton", [100, 100]), baseline) is None  # unequal
    assert score_targets.paired({"name": "triton"}, baseline) is None  # no samples kept


def test_the_recorded_scores_are_up_to_date():
    """Each card's target-scores.log is what its recorded sweeps give (NOTES quotes them)."""
    from learning.report import sweeps

    logs = [folder / "target-scores.log" for folder in sweeps.card_folders()]
    assert logs, "no card folder holds a sweep"
    for log in logs:
        assert log.is_file(), f"{log.parent.name} has sweeps but no target-scores.log"
        done = warm_python.run([sys.executable, str(SCRIPTS / "score_targets.py"), "--results",
                                str(log.parent), "--check", str(log)],
                               capture_output=True, text=True, timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr


def test_bad_input_is_one_line_and_writes_nothing(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "all.json").write_text(json.dumps({"rows": []}))  # no kernel-bench report
    shaped_wrong = tmp_path / "shaped-wrong"
    shaped_wrong.mkdir()
    for name in ("all.json", "all-cold.json"):  # readable JSON, but not a report
        (shaped_wrong / name).write_text(json.dumps({"rows": []}))
    output = tmp_path / "missing" / "scores.log"
    for args in (["--results", str(results)], ["--results", str(shaped_wrong)],
                 ["--results", str(tmp_path / "nope")],
                 ["--write", str(output)], ["--check", str(output)]):  # fmt: skip
        done = warm_python.run([sys.executable, str(SCRIPTS / "score_targets.py"), *args],
                               capture_output=True, text=True, timeout=60)  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert done.stderr.startswith("score_targets: ") and "Traceback" not in done.stderr
    assert not output.parent.exists()


def test_every_target_is_scored_and_the_targets_live_in_one_place():
    """The scoreboard has a line for each target the targets module names."""
    import _targets

    lines, _ = score_targets.scoreboard(SCRIPTS.parent / "results" / "h200")
    text = "\n".join(line["target"] for line in lines)
    for op, share in _targets.BANDWIDTH_SHARE.items():
        assert f"{op} 16384x4096 float16 >= {share:.0%} of the streaming ceiling, warm" in text
    for op in _targets.TRAINING_SPEEDUP_VS_COMPILE:
        assert f"{op} 16384x4096 float16 >= 1.50x compile" in text
        assert f"{op} 16384x4096 float16 >= 1.15x Liger-Kernel" in text
    for shape, dtype in _targets.GEMM_SHAPES:
        assert "matmul " + "x".join(map(str, shape)) + f" {dtype} >= 1.00x" in text
    assert "host time at 1024x1024" in text
    for sweep in ("attention", "attention-training"):
        versus = " and ".join(_targets.ATTENTION_VERSUS)
        assert f"every {sweep} case >= 1.00x the faster of {versus}" in text
        assert f"every causal {sweep} case >= 1.70x faster than the full one" in text
    assert "(moonshot)" in text
    # the attention sweeps are recorded on one card; every other target on both
    unscored = [line for line in lines if line["verdict"] == "-"
                and not line["from"].startswith("attention")]  # fmt: skip
    assert not unscored, f"a target was not found: {unscored}"


def _bench_case(op, shape, gbps_by_variant, dtype="float16"):
    logical = 2 * 16384 * 4096 * 2
    variants = []
    for name, gbps in gbps_by_variant.items():
        median = logical / (gbps * 1e6)
        variants.append({"name": name, "median_ms": median, "min_ms": median,
                         "max_ms": median, "logical_gbps": gbps})  # fmt: skip
    return {"op": op, "shape": list(shape), "dtype": dtype, "logical_bytes": logical,
            "eager_variant": "torch", "variants": variants}  # fmt: skip


def test_bandwidth_is_a_share_of_the_ceiling_its_own_report_measured(tmp_path):
    """A part that re-recorded softmax is judged against the ceiling measured in that part,
    not the base's; a card without the companion records says so instead of failing."""
    folder = tmp_path / "h100"
    folder.mkdir()
    shape = (16384, 4096)
    base = {"started_at": "2026-12-07T00:00:00Z", "cases": [
        _bench_case("add", shape, {"torch": 3000.0, "triton": 2990.0}),
        _bench_case("softmax", shape, {"torch": 2000.0, "triton": 2500.0}),
    ]}  # fmt: skip
    part = {"started_at": "2026-12-07T01:00:00Z", "cases": [
        _bench_case("add", shape, {"torch": 2000.0, "triton": 2000.0}),  # a slower moment
        _bench_case("softmax", shape, {"torch": 1500.0, "triton": 1900.0}),
    ]}  # fmt: skip
    (folder / "all.json").write_text(json.dumps(base))
    (folder / "all.part-20261207T0100.json").write_text(json.dumps(part))
    lines, _ = score_targets.scoreboard(folder)
    by_target = {line["target"]: line for line in lines}
    softmax = by_target["softmax 16384x4096 float16 >= 94% of the streaming ceiling, warm"]
    assert softmax["measured"] == "1900 GB/s, 95.00% of 2000"  # the part's own ceiling
    assert softmax["verdict"] == "met" and softmax["from"] == "all.part-20261207T0100.json"
    cold = by_target["softmax 16384x4096 float16 >= 94% of the streaming ceiling, cold"]
    assert cold["verdict"] == "-" and cold["measured"] == "not recorded on this card"
    host = [line for line in lines if "host time" in line["target"]]
    assert host[0]["measured"] == "not recorded on this card"


def test_the_host_cost_verdict_reads_the_runs_own_ratios_where_the_record_has_them():
    """Each run's ratio cancels that run's host drift; the medians of the rows do not."""
    def row(wrapper, us, **more):
        return {"shape": "1024x1024", "wrapper": wrapper, "host_us_per_call": us, **more}

    runs = {"ratio_to_torch_softmax": 1.18, "ratio_to_torch_softmax_runs": [0.89, 1.18, 1.2]}
    record = {"rows": [row("torch.softmax", 9.0), row("reference softmax", 8.5, **runs)]}
    line = score_targets._host_line(record)
    assert line["verdict"] == "missed" and "1.18x; runs 0.89, 1.18, 1.20" in line["measured"]
    older = {"rows": [row("torch.softmax", 9.0), row("reference softmax", 8.5)]}  # one run
    assert score_targets._host_line(older)["verdict"] == "met"


def test_the_host_cost_verdict_reads_the_paired_samples_where_the_record_has_them():
    """Samples of the two taken back to back: the verdict is their median ratio's."""
    def row(wrapper, us, **more):
        return {"shape": "1024x1024", "wrapper": wrapper, "host_us_per_call": us, **more}

    paired = {"ratio_to_torch_softmax": 1.01, "ratio_to_torch_softmax_runs": [1.01, 1.08, 0.95],
              "paired_ratios": [0.96, 0.97, 0.99], "paired_ratio_to_torch_softmax": 0.97,
              "paired_ratio_quartiles": [0.96, 0.99], "paired_faster": 3}  # fmt: skip
    record = {"rows": [row("torch.softmax", 6.7), row("reference softmax", 7.2, **paired)]}
    line = score_targets._host_line(record)
    assert line["verdict"] == "met"
    assert line["measured"].startswith("0.970x, the median of 3 paired samples")
    assert "runs 1.01, 1.08, 0.95" in line["measured"]
    record["rows"][1]["paired_ratio_to_torch_softmax"] = 1.02
    assert score_targets._host_line(record)["verdict"] == "missed"
    record["rows"][0].update(aa_paired_ratio_to_torch_softmax=1.001,
                             aa_paired_ratio_quartiles=[0.99, 1.012])  # fmt: skip
    assert "A/A torch.softmax against itself 1.001x (0.990-1.012)" in (
        score_targets._host_line(record)["measured"])


def _judged_case(eager: str, versus_compile: str) -> dict:
    def variant(name, kind, median, **verdicts):
        return {"name": name, "kind": kind, "median_ms": median, "min_ms": median,
                "max_ms": median, **verdicts}  # fmt: skip

    return {"op": "rmsnorm", "shape": [64, 128], "dtype": "float16", "eager_variant": eager,
            "variants": [variant(eager, "eager", 3.0), variant("compile", "compile", 1.0),
                         variant("triton", "triton", 1.05,
                                 paired_vs_eager={"verdict": "faster"},
                                 paired_vs={"compile": {"verdict": versus_compile}})]}  # fmt: skip


def test_the_verdict_line_reads_the_reference_against_its_faster_baseline():
    """The faster baseline here is compile, so the verdict is paired_vs["compile"]'s, not the
    one against eager; one confirmed slower case misses the target and is named."""
    report = {"cases": [_judged_case("composition", "slower")]}
    assert score_targets.verdicts(report) == {"slower": ["rmsnorm 64x128 float16"]}
    line = score_targets._verdict_line(score_targets.verdicts(report), "warm", "all.json")
    assert line["verdict"] == "missed" and "1 slower (rmsnorm 64x128 float16)" in line["measured"]
    report = {"cases": [_judged_case("composition", "same")]}
    found = score_targets.verdicts(report)
    assert score_targets._verdict_line(found, "warm", "all.json")["verdict"] == "met"


def test_a_verdict_against_eager_is_read_by_the_cases_eager_name():
    case = _judged_case("composition", "same")
    triton = case["variants"][2]
    eager = case["variants"][0]
    assert score_targets.recorded_verdict(triton, eager, "composition") == "faster"
    assert score_targets.recorded_verdict(triton, case["variants"][1], "composition") == "same"
    no_verdicts = {"name": "triton", "kind": "triton", "median_ms": 1.0}
    assert score_targets.recorded_verdict(no_verdicts, eager, "composition") is None


def test_a_speedup_target_is_met_only_where_its_interval_clears_the_goal():
    """On every card's recorded sweeps: a GEMM or training-step line is "met" when the paired
    ratio's 95% interval lies at or above the goal, "met within noise" when only the ratio of
    medians reaches it."""
    import re

    from learning.report import sweeps

    judged = 0
    for folder in sweeps.card_folders():
        lines, _ = score_targets.scoreboard(folder)
        for line in lines:
            interval = re.search(r"95% ([0-9.]+)-([0-9.]+)", line["measured"])
            goal = re.search(r">= ([0-9.]+)x ", line["target"])
            if not (interval and goal):
                continue
            judged += 1
            ratio, low = float(line["measured"].split("x", 1)[0]), float(interval.group(1))
            goal = float(goal.group(1))
            expected = ("missed" if ratio < goal else "met" if low >= goal
                        else "met within noise")  # fmt: skip
            assert line["verdict"] == expected, (folder.name, line)
    assert judged >= 10, "the scoreboard shows no interval to judge by"
