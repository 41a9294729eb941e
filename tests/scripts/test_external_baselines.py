"""Does scripts/external_baselines.py refuse a CPU and bad input, build its cases from the
registry, map the registry's RMSNorm onto Liger's arguments, and judge the targets honestly?
(CPU; Liger itself is optional and not needed here.)"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest
import warm_python

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "external_baselines.py"
sys.path.insert(0, str(ROOT / "scripts"))

import external_baselines as eb  # noqa: E402  (imports learning first: it selects the backend)

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402


def _run(*args):
    return warm_python.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True,
                           text=True, timeout=120, cwd=ROOT)  # fmt: skip


@pytest.mark.parametrize(
    "args",
    [["--cases", "nope"], ["--cases", "matmul-1x1x1-float16"], ["--autotune-budget-s", "0"],
     ["--autotune-budget-s", "soon"], ["--cases"], ["--rounds", "0"], ["--rounds", "2.5"]],
)  # fmt: skip
def test_bad_arguments_are_one_line_and_exit_2(tmp_path, args):
    output = tmp_path / "out.json"
    done = _run(*args, "--output", output)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith("external_baselines: error: ")
    assert done.stdout == "" and not output.exists()


def test_cases_come_from_the_registry():
    """Training rows at 16384x4096 fp16, the three GEMMs, each a case the registry measures."""
    cases = eb.build_cases()
    assert [c.key for c in cases] == [
        "softmax_train-16384x4096-float16",
        "rmsnorm_train-16384x4096-float16",
        "matmul-8192x8192x8192-bfloat16",
        "matmul-4096x4096x4096-float16",
        "matmul-16384x1024x1024-float16",
    ]
    for case in cases:
        spec = ops.get(case.op)
        assert case.shape in spec.default_shapes and case.dtype in spec.dtypes
        assert case.training == spec.training
    assert cases[0].label == "softmax_train 16384x4096 float16"


def test_cases_are_selected_by_op_key_or_all():
    keys = lambda names: [c.key for c in eb.select_cases(names)]  # noqa: E731
    everything = [c.key for c in eb.build_cases()]
    assert keys(None) == keys([]) == keys(["all"]) == everything
    assert keys(["matmul"]) == everything[2:]
    # canonical order and no duplicates, whatever order they were asked in
    assert keys(["matmul-4096x4096x4096-float16", "softmax_train", "softmax_train"]) == [
        everything[0], everything[3],
    ]  # fmt: skip
    with pytest.raises(ValueError, match="unknown case 'softmax'"):
        eb.select_cases(["softmax"])


def test_parse_args_returns_the_cases():
    args, cases = eb.parse_args(["--cases", "rmsnorm_train", "--no-autotune"])
    assert [c.op for c in cases] == ["rmsnorm_train"] and args.no_autotune
    assert args.autotune_budget_s == 300.0


class _FakeFunction:
    """Records what ``apply`` was given, as an autograd.Function's apply would receive it."""

    calls: list = []

    @classmethod
    def apply(cls, *args):
        cls.calls.append(args)
        x = args[0]
        return (x * 2, x + args[1]) if len(args) > 1 else x * 3


def test_liger_rmsnorm_gets_the_registrys_arguments_and_returns_y():
    """x, residual, weight, eps in Liger's order, then the options closest to the registry's
    FP32 semantics: no weight offset, gemma casting (all FP32), dy left untouched."""
    liger = eb.Liger("test", _FakeFunction, _FakeFunction)
    inputs = ops.get("rmsnorm_train").inputs((4, 8), torch.float16, 0, "cpu")
    _FakeFunction.calls.clear()
    fn = eb.liger_function("rmsnorm_train", liger)
    y = fn(inputs["x"], inputs["residual"], inputs["weight"], inputs["eps"])
    (args,) = _FakeFunction.calls
    assert args[0] is inputs["x"] and args[1] is inputs["residual"]
    assert args[2] is inputs["weight"] and args[3] == ops.RMSNORM_EPS
    assert args[4:] == (0.0, "gemma", False)
    assert torch.equal(y, inputs["x"] * 2)  # y, not the new residual
    assert eb.liger_rmsnorm_arguments(1, 2, 3, 4) == (1, 2, 3, 4, 0.0, "gemma", False)
    with pytest.raises(ValueError):
        eb.liger_function("matmul", liger)


def test_liger_softmax_passes_x_only():
    liger = eb.Liger("test", _FakeFunction, _FakeFunction)
    _FakeFunction.calls.clear()
    x = torch.ones(2, 3)
    assert torch.equal(eb.liger_function("softmax_train", liger)(x), x * 3)
    assert len(_FakeFunction.calls) == 1 and _FakeFunction.calls[0][0] is x


def test_liger_missing_is_reported_not_raised(monkeypatch):
    monkeypatch.setitem(sys.modules, "liger_kernel", None)  # import raises ModuleNotFoundError
    monkeypatch.delitem(sys.modules, "liger_kernel.ops", raising=False)
    monkeypatch.delitem(sys.modules, "liger_kernel.ops.softmax", raising=False)
    monkeypatch.delitem(sys.modules, "liger_kernel.ops.fused_add_rms_norm", raising=False)
    liger, status = eb.load_liger()
    assert liger is None and status == "not installed"


def test_liger_signature_matches_the_mapping_when_installed():
    """Where Liger imports, do its apply arguments line up with the mapping's order?"""
    liger, status = eb.load_liger()
    if liger is None:
        pytest.skip(f"Liger: {status}")
    names = list(inspect.signature(liger.fused_add_rmsnorm.forward).parameters)
    assert names[1:8] == ["X", "R", "W", "eps", "offset", "casting_mode", "in_place"]
    assert list(inspect.signature(liger.softmax.forward).parameters)[1:] == ["input_"]


def _row(case, variant, ms, failure="", note=""):
    return {"case": case, "op": case.split()[0], "variant": variant, "ms": ms,
            "failure": failure, "note": note}  # fmt: skip


def test_ratios_divide_the_best_passing_baseline_by_each_time():
    rows = [
        _row("softmax_train a", eb.REFERENCE, 1.0),
        _row("softmax_train a", eb.EAGER, 3.0),
        _row("softmax_train a", eb.COMPILE, 2.0),
        _row("softmax_train a", eb.LIGER, 0.5, failure="grad_x: 9 values outside tolerance"),
        _row("matmul b", eb.REFERENCE, 2.0),
        _row("matmul b", eb.MM, 1.0),
        _row("matmul b", eb.AUTOTUNE, None, note="skipped (--no-autotune)"),
    ]
    eb.add_ratios(rows)
    ratios = [r["ratio"] for r in rows]
    # a failing baseline is timed but is not "best"; it still gets its own ratio
    assert ratios == [pytest.approx(2.0), pytest.approx(2 / 3), pytest.approx(1.0),
                      pytest.approx(4.0), pytest.approx(0.5), pytest.approx(1.0), None]  # fmt: skip
    speedups = [r["reference_speedup"] for r in rows]  # each baseline's ms / the reference's
    assert speedups == [None, pytest.approx(3.0), pytest.approx(2.0), pytest.approx(0.5),
                        None, pytest.approx(0.5), None]  # fmt: skip


def test_targets_compare_the_reference_with_each_named_baseline():
    rows = [
        _row("softmax_train a", eb.REFERENCE, 1.0),
        _row("softmax_train a", eb.COMPILE, 1.6),
        _row("softmax_train a", eb.LIGER, 1.1),
        _row("rmsnorm_train a", eb.REFERENCE, 1.0),
        _row("rmsnorm_train a", eb.COMPILE, 1.2),
        _row("rmsnorm_train a", eb.LIGER, None, note="Liger not installed"),
        _row("matmul b", eb.REFERENCE, 1.0),
        _row("matmul b", eb.MM, 1.02),
        _row("matmul b", eb.AUTOTUNE, 0.98),
        _row("matmul c", eb.REFERENCE, 1.0),
        _row("matmul c", eb.MM, 0.99),
        _row("matmul c", eb.AUTOTUNE, None, note="skipped (--no-autotune)"),
    ]
    checks = {(c["case"], c["versus"]): c for c in eb.target_checks(rows)}
    assert len(checks) == 6
    softmax_compile = checks[("softmax_train a", eb.COMPILE)]
    assert softmax_compile["ratio"] == pytest.approx(1.6) and softmax_compile["met"] is True
    assert softmax_compile["target"] == 1.5
    assert checks[("softmax_train a", eb.LIGER)]["met"] is False  # 1.10 < 1.15
    assert checks[("rmsnorm_train a", eb.COMPILE)]["met"] is False
    missing = checks[("rmsnorm_train a", eb.LIGER)]
    assert missing["ratio"] is None and missing["met"] is None
    assert "not installed" in missing["basis"]
    gemm = checks[("matmul b", eb.BEST_GEMM)]  # the better baseline is max-autotune
    assert gemm["ratio"] == pytest.approx(0.98) and gemm["met"] is False
    assert gemm["basis"] == eb.AUTOTUNE
    only_mm = checks[("matmul c", eb.BEST_GEMM)]
    assert only_mm["ratio"] == pytest.approx(0.99) and only_mm["met"] is False
    assert "without torch.compile max-autotune" in only_mm["basis"]


def test_a_failing_baseline_or_reference_is_not_judged():
    rows = [
        _row("softmax_train a", eb.REFERENCE, 1.0),
        _row("softmax_train a", eb.COMPILE, 2.0),
        _row("softmax_train a", eb.LIGER, 2.0, failure="grad_x: outside tolerance"),
        _row("rmsnorm_train a", eb.REFERENCE, None, failure="grad_x: outside tolerance"),
        _row("rmsnorm_train a", eb.COMPILE, 2.0),
    ]
    checks = {(c["case"], c["versus"]): c for c in eb.target_checks(rows)}
    liger = checks[("softmax_train a", eb.LIGER)]
    assert liger["ratio"] == pytest.approx(2.0) and liger["met"] is None
    assert "fails the oracle" in liger["basis"]
    reference_failed = checks[("rmsnorm_train a", eb.COMPILE)]
    assert reference_failed["ratio"] is None and reference_failed["met"] is None


def test_variants_are_timed_interleaved_in_shuffled_rounds(monkeypatch):
    """Every graph is captured before anything is timed; then every variant is replayed once
    per round (a few back-to-back replays), the order changes between rounds, and each
    variant's figure is the median of its own samples (not of whoever ran first)."""
    timing = eb.timing
    events, drift = [], iter(range(1000))

    def fake_capture(call, rep_ms=timing.GRAPH_REP_MS):
        events.append(("capture", call()))
        return call(), 1  # the "graph" is the variant's value, one call a replay

    def fake_replay(graph, calls):
        events.append(("replay", graph))
        return graph * 10 + next(drift) * 1e-3  # later replays read slower: a warming GPU

    monkeypatch.setattr(timing, "captured_graph", fake_capture)
    monkeypatch.setattr(timing, "replay_ms", fake_replay)
    calls = {name: (lambda value=value: value) for value, name in enumerate("abcd", start=1)}
    medians = timing.interleaved_graph_ms(calls, rounds=5, seed=3)
    kinds = [kind for kind, _ in events]
    assert kinds[:4] == ["capture"] * 4 and "capture" not in kinds[4:]
    replays = [value for kind, value in events[4:]]
    assert sorted(replays[:4]) == [1, 2, 3, 4]  # one untimed replay each, before the rounds
    per_round = 4 * timing.REPLAYS_PER_ROUND
    timed = replays[4:]
    assert len(timed) == 5 * per_round
    rounds = [timed[i:i + per_round] for i in range(0, len(timed), per_round)]
    orders = [tuple(r[::timing.REPLAYS_PER_ROUND]) for r in rounds]
    assert all(sorted(o) == [1, 2, 3, 4] for o in orders)
    assert all(r == [v for v in o for _ in range(timing.REPLAYS_PER_ROUND)]
               for r, o in zip(rounds, orders, strict=True))  # fmt: skip
    assert len(set(orders)) > 1, "the order never changed"
    assert [round(medians[name]) for name in "abcd"] == [10, 20, 30, 40]


def test_a_variant_that_may_not_run_is_never_timed(monkeypatch):
    """A reference that fails the oracle (call None) keeps ms None; the others get medians."""
    monkeypatch.setattr(eb.timing, "interleaved_graph_ms",
                        lambda calls, rounds, seed=0: {name: 2.0 for name in calls})  # fmt: skip
    case = next(c for c in eb.build_cases() if c.op == "matmul")
    failed = eb._row(case, eb.REFERENCE)
    failed["failure"] = "max abs error 3 > 1"
    rows = eb.time_case(case, [(failed, None), (eb._row(case, eb.MM), lambda: None)], rounds=3)
    assert rows[0]["ms"] is None and rows[1]["ms"] == 2.0
    assert rows[1]["rate"] == pytest.approx(ops.get("matmul").flops(case.shape) / 2e-3 / 1e12)
