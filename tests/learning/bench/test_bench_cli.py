"""Does ``kernel-bench`` parse the documented lines, and refuse bad input in one line?"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from learning.bench import BenchInputError, cli
from learning.bench import config as config_module
from learning.bench.config import check_numbers, select
from learning.bench.suite import SEED_LIMIT

DOCUMENTED = {
    "all": "--op all --dtype float16 --output results/local/all.json",
    "compiled": "--op softmax --shape 1024 1024 --dtype float32 --compile --output sm.json",
    "autotune": "--op matmul --dtype float16 --compile --compile-mode max-autotune --output m.json",
    "events": "--op softmax --timing events --output results/local/softmax-events.json",
    "cpu": "--op softmax --device cpu --output results/local/softmax-cpu.json",
}


def test_the_documented_lines_parse():
    config = cli.parse(DOCUMENTED["all"].split())
    assert (config.op, config.dtype, config.shapes, config.output) == (
        "all",
        "float16",
        None,
        Path("results/local/all.json"),
    )
    assert (config.samples, config.visits, config.timing, config.cache) == (9, 3, "graph", "warm")
    config = cli.parse(DOCUMENTED["compiled"].split())
    assert config.shapes == ((1024, 1024),) and config.compile and config.dtype == "float32"
    assert config.compile_mode == "default"
    autotuned = cli.parse(DOCUMENTED["autotune"].split())
    assert (autotuned.op, autotuned.compile, autotuned.compile_mode) == (
        "matmul",
        True,
        "max-autotune",
    )
    assert cli.parse(DOCUMENTED["events"].split()).timing == "events"
    assert cli.parse(DOCUMENTED["cpu"].split()).device == "cpu"
    recorded = cli.parse("--op all --samples 15 --visits 5 --cache cold --output x.json".split())
    assert (recorded.samples, recorded.visits, recorded.cache) == (15, 5, "cold")
    assert recorded.flush == "read"
    dirty = cli.parse("--op sum --cache cold --flush write --output x.json".split())
    assert dirty.flush == "write"


def test_all_means_every_forward_op_at_its_default_shapes():
    cases = select(cli.parse(DOCUMENTED["all"].split()), device="cuda")
    assert {spec.name for spec, _, _ in cases} == {
        "add",
        "sum",
        "max",
        "softmax",
        "rmsnorm",
        "matmul",
    }
    assert all(dtype == "float16" for _, _, dtype in cases)
    assert all(shape in spec.default_shapes for spec, shape, _ in cases)


@pytest.mark.parametrize("name", ["all", "events"])
def test_the_documented_lines_run_on_the_cpu(name, make_impl, tmp_path, monkeypatch, capsys):
    config = replace(
        cli.parse(DOCUMENTED[name].split()),
        output=tmp_path / "r.json",
        reference_package=make_impl(),
        samples=3,
        visits=3,
    )
    monkeypatch.setattr(cli, "parse", lambda argv: config)
    assert cli.main([]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["complete"] is True
    out = capsys.readouterr().out
    assert "median us" in out and "vs eager" in out


BAD_LINES = {
    "unknown op": "--op sofmax",
    "wrong arity": "--op softmax --shape 1024",
    "zero dimension": "--op softmax --shape 0 1024",
    "negative dimension": "--op softmax --shape -5 1024",
    "non-integer dimension": "--op softmax --shape 1.5 1024",
    "text dimension": "--op softmax --shape abc 1024",
    "gemm shape for a row op": "--op matmul --shape 1024 1024",
    "unsupported dtype": "--op softmax --dtype float64",
    "integer dtype": "--op add --dtype int8",
    "samples not a multiple of visits": "--op softmax --samples 10 --visits 3",
    "zero samples": "--op softmax --samples 0",
    "bad timing": "--op softmax --timing wallclock",
    "bad cache": "--op softmax --cache lukewarm",
    "bad flush": "--op softmax --cache cold --flush sideways",
    "bad compile mode": "--op matmul --compile --compile-mode reduce-overhead",
    "compile mode without --compile": "--op matmul --compile-mode max-autotune",
    "no GPU": "--op softmax --device cuda",
    "unfinished or missing exercise": "--op softmax --impl learner --device cpu",
    "shape too large for memory": "--op softmax --shape 1000000000 1000000000 --device cpu",
    "unknown suite": "--suite rowz",
    "negative seed": "--suite rows --suite-seed -1",
    "seed too large": f"--suite rows --suite-seed {SEED_LIMIT}",
    "text seed": "--suite rows --suite-seed zero",
    "seed without suite": "--op softmax --suite-seed 3",
    "suite and op": "--suite rows --op softmax",
    "suite and dtype": "--suite rows --dtype float16",
    "suite and shape": "--suite gemm --shape 8 8 8",
    "neither op nor suite": "--device cpu",
    "a case not in the suite": "--suite gemm --device cpu --case matmul/7x7x7/float16",
}


@pytest.mark.parametrize("line", BAD_LINES.values(), ids=BAD_LINES.keys())
def test_bad_input_is_one_line_exit_2_and_no_file(line, tmp_path, capsys):
    output = tmp_path / "report.json"
    assert cli.main([*line.split(), "--output", str(output)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "error" in err
    assert list(tmp_path.iterdir()) == []


def test_a_cpu_shape_that_fails_to_allocate_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    """A shape the memory estimate lets through (here: no estimate) and the allocator refuses."""
    monkeypatch.setattr(config_module, "memory_available", lambda: None)
    output = tmp_path / "report.json"
    line = "--op softmax --shape 1000000000 1000000000 --dtype float32 --device cpu --output"
    assert cli.main([*line.split(), str(output)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("kernel-bench: error: out of memory: ") and "smaller --shape" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("where", ["missing directory", "a directory", "unwritable directory"])
def test_an_unusable_output_path_is_refused_before_running(where, tmp_path, capsys):
    output = {
        "missing directory": tmp_path / "nowhere" / "report.json",
        "a directory": tmp_path,
        "unwritable directory": Path("/sys/kernel-bench-report.json"),
    }[where]
    assert cli.main(["--op", "softmax", "--device", "cpu", "--output", str(output)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--output" in err
    assert not output.is_file()


def test_argparse_errors_are_one_line_too(capsys):
    assert cli.main(["--op", "softmax"]) == 2  # --output missing
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_an_unfinished_exercise_is_exit_2_before_timing(
    make_impl, small_config, monkeypatch, capsys
):
    config = small_config(
        reference_package=make_impl(),
        impl="learner",
        learner_package=make_impl("stub", prefix="learner"),
    )
    monkeypatch.setattr(cli, "parse", lambda argv: config)
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "NotImplementedError" in err
    assert not config.output.exists()


def test_an_exercise_whose_kernels_are_todo_is_exit_2(make_impl, small_config, monkeypatch, capsys):
    config = small_config(
        reference_package=make_impl(),
        impl="learner",
        learner_package=make_impl("todo", prefix="learner"),
    )
    monkeypatch.setattr(cli, "parse", lambda argv: config)
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "_softmax_kernel" in err and "unfinished" in err
    assert not config.output.exists()


def test_a_learner_module_that_does_not_import_is_exit_2(
    make_impl, small_config, monkeypatch, capsys
):
    config = small_config(
        reference_package=make_impl(),
        impl="learner",
        learner_package=make_impl("broken", prefix="learner"),
    )
    monkeypatch.setattr(cli, "parse", lambda argv: config)
    assert cli.main([]) == 2
    assert "cannot import" in capsys.readouterr().err


def test_interrupted_command_exits_130_and_keeps_the_old_report(
    make_impl, small_config, monkeypatch, capsys
):
    config = small_config(reference_package=make_impl("interrupt", interrupt_after=5), force=True)
    config.output.write_text("{}\n")
    monkeypatch.setattr(cli, "parse", lambda argv: config)
    assert cli.main([]) == 130
    assert config.output.read_text() == "{}\n"
    err = capsys.readouterr().err
    assert "interrupted" in err and "untouched" in err


def test_a_compile_mode_without_compile_says_what_is_missing(tmp_path, capsys):
    """--compile-mode only chooses how --compile builds its variant; alone it is refused."""
    output = tmp_path / "report.json"
    argv = ["--op", "matmul", "--compile-mode", "max-autotune", "--output", str(output)]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err == (
        "kernel-bench: error: --compile-mode max-autotune needs --compile (it chooses how the "
        "compile baseline is built)\n"
    )
    assert not output.exists()


def test_an_unknown_compile_mode_in_a_config_names_the_choices(small_config):
    """The API refuses what argparse would: BenchConfig is checked, not only the command line."""
    with pytest.raises(BenchInputError) as refused:
        check_numbers(small_config(compile=True, compile_mode="reduce-overhead"))
    assert str(refused.value) == (
        "--compile-mode must be one of default, max-autotune, got 'reduce-overhead'"
    )


def test_host_delay_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("KERNEL_BENCH_HOST_DELAY_US", "20")
    assert cli.parse(DOCUMENTED["all"].split()).host_delay_us == 20.0


def test_the_timing_note_says_how_the_l2_was_flushed():
    """A cold report's note names the flush it used: read (clean lines) or write (dirty)."""
    from learning.bench.record import _timing_note

    settings = {"device": "cuda", "timing": "graph", "cache": "cold", "iterations": 10}
    clean = _timing_note({**settings, "flush": "read"}, "in-graph-events")
    dirty = _timing_note({**settings, "flush": "write"}, "in-graph-events")
    assert "read a buffer" in clean and "clean" in clean
    assert "zero a buffer" in dirty and "dirty" in dirty
    assert "zero a buffer" in _timing_note({**settings, "flush": "write"}, "flush-subtraction")
