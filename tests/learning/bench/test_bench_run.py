"""Does ``learning.bench.run`` follow the method, end to end, on the CPU?"""

from __future__ import annotations

import importlib
import json

import pytest
import torch

import learning.report
from learning.bench import BenchInputError, format_table, incomplete_path, run


def _variants(report, case=0):
    return {v["name"]: v for v in report.data["cases"][case]["variants"]}


def test_a_cpu_run_is_a_valid_report_marked_as_interpreter_timing(make_impl, small_config):
    config = small_config(reference_package=make_impl(), seed=11)
    report = run(config)
    assert report.complete and report.path == config.output
    assert json.loads(config.output.read_text()) == report.data
    assert learning.report.validate(report.data) == []
    settings = report.data["settings"]
    assert settings["timing"] == "cpu-interpreter" and "interpreter" in report.data["timing_note"]
    assert (settings["seed"], settings["samples"], settings["visits"]) == (11, 4, 2)
    assert report.data["gpu_utilization_percent"]["before"] is None
    assert report.data["gpu_utilization_percent"]["reason"]
    variants = _variants(report)
    assert [(v["name"], v["kind"]) for v in variants.values()] == [
        ("torch", "eager"),
        ("triton", "triton"),
    ]
    for variant in variants.values():
        assert variant["status"] == "timed" and len(variant["samples_ms"]) == 4
        assert variant["correctness"]["passed"] is True
    assert variants["torch"]["ratio_vs_eager"] == 1.0


def test_a_variant_that_fails_the_oracle_is_recorded_and_never_timed(make_impl, small_config):
    package = make_impl("wrong")
    report = run(small_config(reference_package=package))
    triton = _variants(report)["triton"]
    assert (
        triton["status"] == "failed" and triton["samples_ms"] == [] and triton["median_ms"] is None
    )
    assert triton["correctness"]["passed"] is False and triton["paired_vs_eager"] is None
    assert "outside tolerance" in triton["correctness"]["reason"]
    calls = importlib.import_module(f"{package}.kernels.softmax").CALLS[0]
    assert calls == 2, "only the gate (a first call, then the checked one) may call it"
    assert _variants(report)["torch"]["status"] == "timed"
    assert learning.report.validate(report.data) == []


def test_out_of_memory_is_skipped_with_its_reason_and_the_sweep_goes_on(make_impl, small_config):
    config = small_config(reference_package=make_impl("oom"), shapes=((4, 8), (3, 5)))
    report = run(config)
    assert len(report.data["cases"]) == 2
    for case in range(2):
        triton = _variants(report, case)["triton"]
        assert triton["status"] == "skipped" and "out of memory" in triton["reason"]
        assert _variants(report, case)["torch"]["status"] == "timed"
    assert learning.report.validate(report.data) == []


def test_rmsnorm_compares_every_baseline_and_the_extra_variants_hook(make_impl, small_config):
    report = run(small_config(op="rmsnorm", reference_package=make_impl(), samples=2, visits=1))
    case = report.data["cases"][0]
    assert case["eager_variant"] == "composition"
    names = [(v["name"], v["kind"]) for v in case["variants"]]
    assert names == [
        ("composition", "eager"),
        ("torch_rms_norm", "eager"),
        ("triton", "triton"),
        ("triton:again", "triton"),
    ]
    assert _variants(report)["composition"]["ratio_vs_eager"] == 1.0


def test_training_ops_time_forward_and_backward(make_impl, small_config):
    report = run(
        small_config(
            op="training",
            shapes=None,
            dtype="float32",
            samples=1,
            visits=1,
            reference_package=make_impl(),
        )
    )
    ops_run = {case["op"] for case in report.data["cases"]}
    assert ops_run == {"softmax_train", "rmsnorm_train", "matmul_train"}
    assert all(v["status"] == "timed" for c in report.data["cases"] for v in c["variants"])
    gemm = next(c for c in report.data["cases"] if c["op"] == "matmul_train")
    m, n, k = gemm["shape"]
    assert gemm["flops"] == 6 * m * n * k and gemm["variants"][0]["tflops"] is not None


@pytest.mark.parametrize(
    "compile_mode, torch_mode",
    [("default", "default"), ("max-autotune", "max-autotune-no-cudagraphs")],
)
def test_compile_adds_a_fresh_compiled_function_per_case(
    compile_mode, torch_mode, make_impl, small_config, monkeypatch
):
    """Inductor's C++ build (and max-autotune's search) is too slow for CI; aot_eager runs the
    same Dynamo/AOTAutograd path, and the recorded options say which mode was asked for."""
    compiled = []
    real_compile = torch.compile

    def compile_for_test(fn, **options):
        compiled.append((fn, options))
        return real_compile(fn, backend="aot_eager", dynamic=options["dynamic"])

    monkeypatch.setattr(torch, "compile", compile_for_test)
    config = small_config(
        op="softmax_train",
        shapes=((4, 8), (3, 5)),
        compile=True,
        compile_mode=compile_mode,
        samples=1,
        visits=1,
        reference_package=make_impl(),
    )
    report = run(config)
    for index in range(len(report.data["cases"])):
        compile_variant = _variants(report, index)["compile"]
        assert (compile_variant["kind"], compile_variant["status"]) == ("compile", "timed")
    expected = {"dynamic": False, "mode": torch_mode}
    assert [options for _, options in compiled] == [expected, expected]
    first, second = compiled[0][0], compiled[1][0]
    assert first is not second and first.__code__ is not second.__code__
    assert report.data["settings"]["compile_mode"] == compile_mode
    assert learning.report.validate(report.data) == []
    footer = format_table(report.data).splitlines()[-1]
    assert f"compile: {compile_mode}." in footer, footer


def test_host_delay_moves_a_cpu_figure(make_impl, small_config):
    """The debug hook really stalls inside the timed call (a graph replay must not see it)."""
    report = run(
        small_config(reference_package=make_impl(), host_delay_us=3000, samples=2, visits=1)
    )
    assert all(v["min_ms"] >= 3.0 for v in report.data["cases"][0]["variants"])


def test_cold_cache_runs_on_the_cpu(make_impl, small_config):
    report = run(small_config(reference_package=make_impl(), cache="cold", samples=2, visits=1))
    assert report.data["settings"]["cache"] == "cold"
    assert learning.report.validate(report.data) == []


def test_an_interrupted_run_writes_what_it_completed(make_impl, small_config):
    # calls: 1 oracle check, 1 warm-up, visit 1 (1 untimed + 2 samples), then the interrupt.
    config = small_config(reference_package=make_impl("interrupt", interrupt_after=5))
    report = run(config)
    assert report.complete is False and report.path == config.output
    assert report.data["complete"] is False
    assert learning.report.validate(report.data) == []
    assert 1 <= len(_variants(report)["triton"]["samples_ms"]) < 4


def test_an_interrupted_run_never_replaces_an_existing_report(make_impl, small_config):
    config = small_config(reference_package=make_impl("interrupt", interrupt_after=5), force=True)
    config.output.write_text("the earlier, complete report\n")
    report = run(config)
    assert config.output.read_text() == "the earlier, complete report\n"
    assert report.path == incomplete_path(config.output) and report.path.exists()
    assert json.loads(report.path.read_text())["complete"] is False


def test_an_unfinished_exercise_stops_the_run_before_any_timing(make_impl, small_config):
    config = small_config(
        reference_package=make_impl(),
        impl="learner",
        learner_package=make_impl("stub", prefix="learner"),
    )
    with pytest.raises(BenchInputError, match="unfinished") as raised:
        run(config)
    assert "\n" not in str(raised.value)
    assert not config.output.exists()


def test_a_learner_kernel_that_fails_the_oracle_is_recorded_as_failed(make_impl, small_config):
    config = small_config(
        reference_package=make_impl(),
        impl="learner",
        learner_package=make_impl("wrong", prefix="learner"),
    )
    report = run(config)
    variants = _variants(report)
    assert variants["learner"]["kind"] == "learner" and variants["learner"]["status"] == "failed"
    assert variants["triton"]["status"] == "timed"


def test_the_same_seed_gives_the_same_inputs_and_order(make_impl, small_config, tmp_path):
    package = make_impl()
    first = run(small_config(reference_package=package, seed=5, output=tmp_path / "a.json"))
    second = run(small_config(reference_package=package, seed=5, output=tmp_path / "b.json"))
    assert [v["correctness"] for v in first.data["cases"][0]["variants"]] == [
        v["correctness"] for v in second.data["cases"][0]["variants"]
    ]


@pytest.mark.skipif(
    importlib.util.find_spec("reference.kernels.softmax") is None,
    reason="reference/kernels/softmax.py is not written yet",
)
def test_the_reference_softmax_on_the_cpu(small_config):
    report = run(small_config(reference_package="reference", samples=2, visits=1))
    assert _variants(report)["triton"]["status"] == "timed"
    assert learning.report.validate(report.data) == []


class _FakeL2:
    """A persisting-L2 limit the test moves, standing in for the CUDA driver's."""

    def __init__(self, size: int = 0) -> None:
        self.size, self.restored = size, []

    def bytes(self) -> int:
        return self.size

    def restore(self, size: int) -> None:
        self.restored.append(size)
        self.size = size


def test_a_variant_that_sets_l2_aside_is_rejected_untimed_and_the_limit_restored():
    """The L2-residency guard (the GPU run is tests/adversarial/test_l2_residency.py)."""
    from learning.bench import engine
    from learning.bench.variants import VariantSpec

    state = engine.VariantState(variant=VariantSpec("learner", "learner", torch.softmax))
    state.status, state.timed = "ready", object()
    fake = _FakeL2(0)
    runner = engine.Run(config=None, progress=None, persisting_l2=fake)
    engine._guard_l2_residency(runner, state, before=0)  # nothing changed: left alone
    assert state.status == "ready" and fake.restored == []
    fake.size = 32 << 20
    engine._guard_l2_residency(runner, state, before=0)
    assert state.status == "failed" and state.timed is None
    assert "32.0 MiB" in state.reason and "survives the cold-cache flush" in state.reason
    assert state.correctness["passed"] is False and fake.restored == [0] and fake.size == 0


def test_the_ith_samples_of_a_cases_variants_come_from_one_round(
    make_impl, small_config, monkeypatch
):
    """The report keeps each variant's samples in round order, one a round, so sample i of
    two variants was timed in the same round, back to back (scripts/score_targets.py pairs
    them). Each sample is replaced by the index of the call that started it."""
    from learning.bench import engine

    started = []
    original = engine._start_sample

    def numbered(item):
        read = original(item)
        if read is None:
            return None
        started.append(item)
        index = len(started)
        return lambda: (read(), index)[1] / 1e3  # the start's index, as "milliseconds"

    monkeypatch.setattr(engine, "_start_sample", numbered)
    report = run(small_config(op="rmsnorm", reference_package=make_impl(), samples=4, visits=2))
    variants = [v for v in report.data["cases"][0]["variants"] if v["samples_ms"]]
    assert len(variants) >= 3 and {len(v["samples_ms"]) for v in variants} == {4}
    for i in range(4):
        starts = sorted(round(v["samples_ms"][i] * 1e3) for v in variants)
        assert starts == list(range(starts[0], starts[0] + len(variants)))  # one round's block


# Scripted samples: per round, eager drifts (1, 3, 2, 5 ms) and triton takes half as long,
# except in round 3, where it is slower than eager (2.2 against 2).
SCRIPTED_MS = {"torch": [1.0, 3.0, 2.0, 5.0], "triton": [0.5, 1.5, 2.2, 2.5]}


@pytest.fixture
def scripted_report(make_impl, small_config, monkeypatch):
    """A CPU run whose samples are SCRIPTED_MS, in round order, whatever the CPU took."""
    from learning.bench import engine

    original, taken = engine._start_sample, {name: 0 for name in SCRIPTED_MS}

    def scripted(item):
        read = original(item)
        if read is None:
            return None
        name = item.variant.name
        value, taken[name] = SCRIPTED_MS[name][taken[name]], taken[name] + 1
        return lambda: (read(), value)[1]

    monkeypatch.setattr(engine, "_start_sample", scripted)
    return run(small_config(reference_package=make_impl(), samples=4, visits=2))


def test_each_timed_variant_is_compared_with_eager_round_by_round(scripted_report):
    """paired_vs_eager: the median over rounds of eager's sample over the variant's, the rounds
    it lost to eager, and the sign test; eager itself has none. The ratio of medians (1.35x)
    mixes in the drift between rounds; the paired ratio (2x) does not."""
    variants = _variants(scripted_report)
    assert variants["torch"]["samples_ms"] == SCRIPTED_MS["torch"], "the script did not apply"
    assert variants["torch"]["paired_vs_eager"] is None, "eager against itself is no comparison"
    assert variants["triton"]["paired_vs_eager"] == {
        "paired_ratio": 2.0,  # per round 2, 2, 2/2.2, 2
        "slower": 1,  # round 3
        "rounds": 4,
        "p": 2 * (1 + 4) / 2**4,  # 1 of 4 rounds either way: 0.625
        # four rounds are too few for an interval: nothing is resolved
        "paired_ratio_ci": None,
        "interval_unit": "visit",  # two visits of two rounds
        "interval_units": 2,
        "verdict": "ambiguous",
        "margin": 0.02,
        "excluded_rounds": 0,
    }
    assert variants["triton"]["ratio_vs_eager"] == pytest.approx(2.5 / 1.85)
    assert learning.report.validate(scripted_report.data) == []


def test_the_table_shows_the_paired_ratio_and_the_rounds_lost(scripted_report):
    lines = format_table(scripted_report.data).splitlines()
    header, torch_row, triton_row = lines[0].split(), lines[1], lines[2]
    assert header[header.index("eager") + 1 :][:4] == ["paired", "slower", "interval",
                                                      "verdict"], lines[0]  # fmt: skip
    assert torch_row.split()[-6:] == ["1.00x", "-", "-", "-", "-", "timed"], torch_row
    assert triton_row.split()[-6:] == ["1.35x", "2.00x", "1/4", "-", "ambiguous", "timed"]
    assert any(line.startswith("vs eager: ") and "paired: " in line for line in lines[3:])
    assert lines[-1].startswith("timing: cpu-interpreter"), "the timing note stays last"


def test_the_table_of_a_report_made_before_paired_vs_eager_shows_dashes(scripted_report):
    for variant in scripted_report.data["cases"][0]["variants"]:
        del variant["paired_vs_eager"]
    triton_row = format_table(scripted_report.data).splitlines()[2]
    assert triton_row.split()[-6:] == ["1.35x", "-", "-", "-", "-", "timed"], triton_row
