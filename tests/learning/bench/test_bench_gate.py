"""Does the gate keep checking, and is evidence never overwritten? Each cheat below passed the
single check before timing that the benchmark used to make; each must now fail with its reason.

The cheats live in the throwaway reference package (``conftest.make_impl``), which runs in the
benchmark's own process: the gate has to catch them there by what the outputs show. (A
learner's kernel never runs in that process: ``test_bench_learner.py``.)
"""

from __future__ import annotations

import json
import threading

import pytest
import torch

import learning.report
from learning import ops
from learning.bench import cli, engine, gate, run


def _variants(report, case=0):
    return {v["name"]: v for v in report.data["cases"][case]["variants"]}


def _failed(report, name="triton"):
    variant = _variants(report)[name]
    assert variant["status"] == "failed", variant
    assert variant["samples_ms"] == [] and variant["median_ms"] is None
    assert variant["correctness"]["passed"] is False
    assert learning.report.validate(report.data) == []
    return variant["reason"]


# --------------------------------------------------------------------------- the gate's checks


def _softmax_case(seed=3):
    spec = ops.get("softmax")
    inputs = spec.inputs((4, 16), torch.float32, seed, "cpu")
    return spec, inputs, spec.call(ops.OPS["softmax"].baselines["torch"], inputs)


def test_correct_outputs_pass_and_poisoned_ones_are_never_stored():
    spec, inputs, outputs = _softmax_case()
    check = gate.check_outputs(spec, inputs, outputs, torch.float32, "cpu", settle_s=0)
    assert check.passed and check.reason is None and check.tolerance_used <= 1
    gate.poison(outputs[0][1])  # one row as if no program stored it
    check = gate.check_outputs(spec, inputs, outputs, torch.float32, "cpu", settle_s=0)
    assert not check.passed
    assert check.reason.startswith("output: 16 of 64 elements never stored"), check.reason


def test_an_answer_kept_from_the_first_call_is_poisoned_for_the_checked_call():
    """What an unwritten or cached output would otherwise hold: a right answer from before."""
    spec, inputs, right = _softmax_case()
    kept = [right[0].clone()]
    gate.first_call(lambda: (kept[0],), inputs)
    check = gate.check_outputs(spec, inputs, (kept[0],), torch.float32, "cpu", settle_s=0)
    assert not check.passed and "64 of 64 elements never stored" in check.reason, check.reason


def test_the_allocation_trap_marks_what_a_call_left_unwritten():
    spec, inputs, _ = _softmax_case()
    outputs = (gate.trapped(lambda: torch.empty_like(inputs["x"])),)
    check = gate.check_outputs(spec, inputs, outputs, torch.float32, "cpu", settle_s=0)
    assert not check.passed and "64 of 64 elements never stored" in check.reason


def test_a_first_call_never_poisons_an_input():
    spec, inputs, _ = _softmax_case()
    before = inputs["x"].clone()
    gate.first_call(lambda: (inputs["x"][1:],), inputs)  # an output that is a view of x
    assert torch.equal(inputs["x"], before)


def test_an_output_that_changes_after_the_call_returned_fails_the_settle_check():
    """Right when returned, changed while the oracle was being compared: work nobody timed."""
    spec, inputs, outputs = _softmax_case()
    late = threading.Timer(0.01, lambda: outputs[0][0].mul_(0.5))
    late.start()
    check = gate.check_outputs(spec, inputs, outputs, torch.float32, "cpu", settle_s=0.2)
    late.join()
    assert not check.passed
    assert "16 of 64 elements changed after the call returned" in check.reason, check.reason


# --------------------------------------------------------------------------- cheats, end to end


def test_an_output_never_written_is_caught_every_time(make_impl, small_config):
    """It used to hold the previous variant's freed output, and pass, in 2 runs of 4."""
    package = make_impl("unwritten")
    for seed in range(3):
        report = run(small_config(reference_package=package, seed=seed, force=True))
        assert "32 of 32 elements never stored" in _failed(report)
        assert _variants(report)["torch"]["status"] == "timed"


def test_an_output_finished_by_a_thread_after_returning_is_caught(make_impl, small_config):
    reason = _failed(run(small_config(reference_package=make_impl("thread"))))
    assert "never stored" in reason or "changed after the call returned" in reason, reason


def test_the_float64_oracle_does_not_exist_while_a_variant_runs(make_impl, small_config):
    """A variant that copies any float64 tensor of the output's shape finds none."""
    reason = _failed(run(small_config(reference_package=make_impl("gc_oracle"))))
    assert "failed the float64 oracle" in reason, reason


@pytest.mark.parametrize("mode", ["cache_ptr", "cache_version"])
def test_a_cache_is_caught_before_timing(mode, make_impl, small_config):
    """The checked call is a second call: a cached answer is the first one's, poisoned."""
    report = run(small_config(reference_package=make_impl(mode)))
    assert "32 of 32 elements never stored" in _failed(report)
    assert _variants(report)["torch"]["status"] == "timed"


def test_work_that_stops_after_the_checked_call_fails_the_recheck(make_impl, small_config):
    report = run(small_config(reference_package=make_impl("after_two")))
    reason = _failed(report)
    assert reason.startswith("re-checked after timing"), reason
    assert "never stored" in reason
    assert _variants(report)["torch"]["status"] == "timed"


def test_every_timed_call_sees_a_new_version_of_its_inputs(make_impl, small_config):
    """So a cache keyed on the inputs' version never answers one."""
    package = make_impl("version_log")
    report = run(small_config(reference_package=package))
    assert _variants(report)["triton"]["status"] == "timed"
    module = __import__(f"{package}.kernels.softmax", fromlist=["CACHE"])
    # the first and the checked call, a warm-up, 2 visits of (1 untimed + 2 samples), and the
    # re-check's two: every call after the checked one saw a version of its own
    assert module.CALLS[0] == 11
    assert len(module.CACHE) == 10, "two timed calls saw the same version of the inputs"


def test_the_recheck_refills_the_very_tensors_that_were_timed(make_impl, small_config, monkeypatch):
    """And leaves a variant that really computes alone."""
    refilled, cases = [], []
    real_refill, real_prepare = gate.refill, engine._prepare_case

    def refill(inputs, fresh):
        refilled.append(inputs)
        real_refill(inputs, fresh)

    def prepare_case(state, case):
        cases.append(case)
        real_prepare(state, case)

    monkeypatch.setattr(gate, "refill", refill)
    monkeypatch.setattr(engine, "_prepare_case", prepare_case)
    report = run(small_config(reference_package=make_impl()))
    assert _variants(report)["triton"]["status"] == "timed"
    assert refilled == [cases[0].inputs] and refilled[0] is cases[0].inputs


def test_tampering_in_the_benchmark_process_is_named_in_the_warnings(
    make_impl, small_config, monkeypatch
):
    from learning.bench import timers

    # what the package replaces is put back after the test
    from learning.ops import softmax as definition

    monkeypatch.setattr(definition, "torch", definition.torch)
    monkeypatch.setattr(timers.CpuTimer, "prepare", timers.CpuTimer.prepare)
    report = run(small_config(reference_package=make_impl("tamper")))
    (warning,) = [w for w in report.data["warnings"] if "changed while it ran" in w]
    assert "learning.ops.softmax.torch was replaced" in warning
    assert "learning.bench.timers.CpuTimer.prepare was replaced" in warning
    assert learning.report.validate(report.data) == []


def test_an_honest_run_has_no_tampering_warning(make_impl, small_config):
    report = run(small_config(reference_package=make_impl()))
    assert not [w for w in report.data["warnings"] if "changed while it ran" in w]


# --------------------------------------------------------------------------- evidence


def test_an_existing_report_is_refused_without_force(make_impl, small_config, monkeypatch, capsys):
    config = small_config(reference_package=make_impl())
    config.output.write_text('{"recorded": "on a GPU"}\n')
    monkeypatch.setattr(cli, "parse", lambda argv: config)
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "already exists" in err and "--force" in err
    assert config.output.read_text() == '{"recorded": "on a GPU"}\n'
    assert sorted(p.name for p in config.output.parent.glob("*report*")) == ["report.json"]


def test_force_replaces_an_existing_report(make_impl, small_config):
    config = small_config(reference_package=make_impl(), force=True)
    config.output.write_text("{}\n")
    report = run(config)
    assert report.path == config.output
    assert json.loads(config.output.read_text())["complete"] is True
    assert "force" not in report.data["settings"]


def test_the_command_line_takes_force(tmp_path):
    config = cli.parse(["--op", "softmax", "--output", str(tmp_path / "r.json"), "--force"])
    assert config.force is True
    assert cli.parse(["--op", "softmax", "--output", "r.json"]).force is False


def test_a_report_that_appears_during_the_run_is_left_alone(make_impl, small_config, monkeypatch):
    config = small_config(reference_package=make_impl())
    original = engine.sample

    def sample_while_another_run_writes(state):
        original(state)
        config.output.write_text("another run's report\n")

    monkeypatch.setattr(engine, "PHASES", tuple(
        (name, sample_while_another_run_writes if name == "sample" else phase)
        for name, phase in engine.PHASES
    ))  # fmt: skip
    report = run(config)
    assert config.output.read_text() == "another run's report\n"
    assert report.path == config.output.with_name("report-2.json")
    assert json.loads(report.path.read_text())["complete"] is True


def test_a_failed_write_leaves_no_file(make_impl, small_config, monkeypatch):
    config = small_config(reference_package=make_impl())

    def no_room(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(engine.os, "link", no_room)
    monkeypatch.setattr(engine.os, "replace", no_room)
    with pytest.raises(OSError):
        run(config)
    assert list(config.output.parent.glob("*report*")) == []
