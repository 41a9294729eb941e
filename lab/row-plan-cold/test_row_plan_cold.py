"""row_plan_cold.py on a CPU.

It measures on a CUDA GPU only; here: its refusal of a CPU and of bad arguments (one line,
nothing written), the plans it times, the arithmetic that turns its interleaved samples into
the rows it prints, the order it samples in, and how it reads Inductor's launch config.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import weakref
from dataclasses import asdict
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
import warm_python

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import row_plan_cold as probe  # noqa: E402  (imports learning first: it selects the backend)

from learning.runtime import interpreting  # noqa: E402
from reference.kernels import rmsnorm  # noqa: E402
from reference.kernels.row_plan import RowPlan  # noqa: E402

SCRIPT = Path(__file__).resolve().parent / "row_plan_cold.py"


def _run(*args) -> subprocess.CompletedProcess:
    return warm_python.run([sys.executable, str(SCRIPT), *map(str, args)],
                           capture_output=True, text=True, cwd=ROOT, timeout=120)  # fmt: skip


@pytest.mark.skipif(not interpreting(), reason="checks the CPU refusal")
def test_it_refuses_a_cpu_in_one_line_and_writes_nothing(tmp_path):
    output = tmp_path / "out.json"
    done = _run("--samples", "1", "--output", output)
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(done.stdout.strip().splitlines()) == 1 and "GPU" in done.stdout
    assert "Traceback" not in done.stderr and not output.exists()


@pytest.mark.parametrize(("args", "says"), [
    (["--shapes", "12x"], "--shapes"),
    (["--shapes", "1024x1024x4"], "--shapes"),
    (["--dtypes", "int8"], "--dtypes"),
    (["--samples", "0"], "--samples"),
    (["--rows", "3"], "--rows"),
    (["--warps", "64"], "--warps"),
    (["--cache", "hot"], "--cache"),
])  # fmt: skip
def test_bad_arguments_are_one_line_and_exit_2(args, says, tmp_path):
    output = tmp_path / "out.json"
    done = _run(*args, "--output", output)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("row_plan_cold: error: ") and says in lines[0]
    assert not output.exists()


def test_arguments_parse_to_shapes_and_dtypes_once_each():
    args = probe.parse_args(["--shapes", "1024x1024", "65536X128", "1024x1024",
                             "--dtypes", "float16", "float16"])  # fmt: skip
    assert args.shapes == [(1024, 1024), (65536, 128)] and args.dtypes == ["float16"]
    default = probe.parse_args([])
    assert default.shapes == [(1024, 1024), (65536, 128)]
    assert default.dtypes == ["float32", "float16"] and default.samples == 15


def _per_thread(plan: RowPlan) -> int:
    return plan.rows_per_program * plan.block_cols // (32 * plan.num_warps)


@pytest.mark.parametrize(("n_cols", "element_size", "own"), [
    (1024, 4, RowPlan(1024, 1, 8, chunked=False)),
    (1024, 2, RowPlan(1024, 2, 8, chunked=False)),
    (128, 2, RowPlan(128, 16, 8, chunked=False)),  # 16 rows: outside the grid, listed anyway
])  # fmt: skip
def test_the_reference_plan_is_among_the_candidates(n_cols, element_size, own):
    reference, plans = probe.candidate_plans(n_cols, element_size)
    assert reference == own == rmsnorm.forward_plan(1, n_cols, element_size)
    assert plans.count(own) == 1


@pytest.mark.parametrize(("n_cols", "element_size"), [(1024, 4), (1024, 2), (128, 2), (781, 4)])
def test_every_grid_plan_keeps_one_vector_to_64_values_a_thread(n_cols, element_size):
    reference, plans = probe.candidate_plans(n_cols, element_size)
    vector = 16 // element_size
    block = 1 << (n_cols - 1).bit_length()
    for plan in plans:
        assert not plan.chunked and plan.block_cols == block and plan.num_stages == 1
        if plan != reference:
            assert plan.rows_per_program in probe.ROWS and plan.num_warps in probe.WARPS
            assert vector <= _per_thread(plan) <= probe.MAX_THREAD_VALUES, plan
    # and nothing the bounds admit is left out
    admitted = {(r, w) for r in probe.ROWS for w in probe.WARPS
                if vector <= r * block // (32 * w) <= probe.MAX_THREAD_VALUES}  # fmt: skip
    listed = {(p.rows_per_program, p.num_warps) for p in plans if p != reference}
    assert listed | {(reference.rows_per_program, reference.num_warps)} >= admitted
    assert listed <= admitted


def test_the_bounds_cut_the_grid_where_they_should():
    """1024 fp32: 4 fp32 a vector, so one row on 16 warps (2 a thread) is out, and 8 rows on 2
    warps (128 a thread) too; 128 fp16: one row is too little for any warp count here."""
    _, wide = probe.candidate_plans(1024, 4)
    pairs = [(p.rows_per_program, p.num_warps) for p in wide]
    assert pairs == [(1, 2), (1, 4), (1, 8), (2, 2), (2, 4), (2, 8), (2, 16), (4, 2), (4, 4),
                     (4, 8), (4, 16), (8, 4), (8, 8), (8, 16)]  # fmt: skip
    _, narrow = probe.candidate_plans(128, 2)
    assert [(p.rows_per_program, p.num_warps) for p in narrow] == [(4, 2), (8, 2), (8, 4),
                                                                   (16, 8)]  # fmt: skip


def test_plan_labels_name_rows_and_warps():
    assert probe.plan_label(RowPlan(1024, 2, 8, chunked=False)) == "plan 2x8"
    assert probe.plan_label(RowPlan(8192, 1, 32, chunked=True)) == "plan chunk 8192 w32"


def test_summary_medians_ratios_and_rounds_lost():
    samples = {
        "compile": [0.0070, 0.0072, 0.0071, 0.0069, 0.0070],
        "reference": [0.0073, 0.0075, 0.0074, 0.0072, 0.0068],
        "plan 1x4": [0.0070, 0.0072, 0.0071, 0.0069, 0.0070],
    }
    rows = probe.summarize(samples)
    reference = rows["reference"]
    assert reference["median_us"] == pytest.approx(7.3)
    assert (reference["min_us"], reference["max_us"]) == (pytest.approx(6.8), pytest.approx(7.5))
    assert reference["samples_us"] == pytest.approx([7.3, 7.5, 7.4, 7.2, 6.8])
    assert reference["compile_over_median"] == pytest.approx(7.0 / 7.3)
    ratios = [70 / 73, 72 / 75, 71 / 74, 69 / 72, 70 / 68]
    assert reference["paired_vs_compile"]["paired_ratio"] == pytest.approx(
        statistics.median(ratios))
    assert reference["rounds_lost_to_compile"] == 4
    assert reference["paired_vs_compile"]["rounds"] == 5
    tie = rows["plan 1x4"]  # every round a tie: no round won or lost
    assert tie["paired_vs_compile"]["paired_ratio"] == pytest.approx(1.0)
    assert tie["paired_vs_compile"]["rounds"] == 0 and tie["rounds_lost_to_compile"] == 0
    assert rows["compile"]["paired_vs_compile"] is None
    assert rows["compile"]["rounds_lost_to_compile"] is None


def test_a_flush_only_graph_is_subtracted_as_kernel_bench_does():
    samples = {probe.FLUSH: [0.300, 0.302, 0.298],
               "compile": [0.307, 0.308, 0.306], "reference": [0.308, 0.309, 0.306]}  # fmt: skip
    rows = probe.summarize(samples)
    assert set(rows) == {"compile", "reference"}
    assert rows["compile"]["median_us"] == pytest.approx(7.0)
    assert rows["reference"]["samples_us"] == pytest.approx([8.0, 9.0, 6.0])
    assert rows["reference"]["rounds_lost_to_compile"] == 2


class _Timed:
    """What a kernel-bench timer's ``prepare`` returns, logging what is done to it."""

    def __init__(self, case, label, log):
        self.case, self.label, self.log = case, label, log

    def replay_untimed(self):
        self.log.append(("untimed", self.case, self.label))

    def sample(self):
        self.log.append(("sample", self.case, self.label))
        value = len(self.log)
        return lambda: value


def _cases(log):
    return {case: {label: _Timed(case, label, log) for label in ("compile", "a", "b")}
            for case in ("c1", "c2")}  # fmt: skip


def test_every_round_samples_every_variant_once_in_a_seeded_shuffled_order():
    log, finished = [], []
    samples = probe.sample_rounds(_cases(log), rounds=6, seed=3,
                                  finish_round=lambda: finished.append(len(log)))  # fmt: skip
    assert {case: {k: len(v) for k, v in row.items()} for case, row in samples.items()} == {
        "c1": {"compile": 6, "a": 6, "b": 6}, "c2": {"compile": 6, "a": 6, "b": 6}}
    visits = [log[i:i + 6] for i in range(0, len(log), 6)]  # per case visit: 3 untimed, 3 timed
    assert len(visits) == 12
    for visit in visits:
        assert [kind for kind, _, _ in visit] == ["untimed"] * 3 + ["sample"] * 3
        assert len({case for _, case, _ in visit}) == 1
        assert sorted(label for kind, _, label in visit if kind == "sample") == ["a", "b",
                                                                                 "compile"]
    orders = {tuple(label for kind, _, label in v if kind == "sample") for v in visits}
    assert len(orders) > 1  # shuffled, not one fixed order
    assert len(finished) == 24  # after the untimed replays, and before reading the samples
    again = []
    probe.sample_rounds(_cases(again), rounds=6, seed=3, finish_round=lambda: None)
    assert again == log


def test_the_launch_config_is_the_one_launcher_left_after_autotuning():
    """As read on the H200 (torch 2.11): a persistent reduction, ``configs`` already None, its
    R0_BLOCK the whole row rather than a config value."""
    import triton

    winner = triton.Config({"XBLOCK": 1}, num_warps=1, num_stages=1)
    launcher = SimpleNamespace(config=winner, n_regs=72, n_spills=0, shared=0)
    autotuner = SimpleNamespace(
        fn=SimpleNamespace(__name__="triton_per_fused_add_mean_0"), configs=None,
        launchers=[launcher], heuristic_type="HeuristicType.PERSISTENT_REDUCTION",
        size_hints={"x": 1024, "r0_": 1024}, inductor_meta={},
    )  # fmt: skip
    record = probe.launch_config(autotuner)
    assert record["kernel"] == "triton_per_fused_add_mean_0" and record["launchers"] == 1
    assert record["chosen"] == {"kwargs": {"XBLOCK": 1}, "num_warps": 1, "num_stages": 1,
                                "n_regs": 72, "n_spills": 0, "shared": 0}  # fmt: skip
    assert record["persistent_r0_block"] == 1024 and record["benchmarked"] is None
    assert probe.config_text({"kernels": [record]}) == "XBLOCK=1 R0_BLOCK=1024 (persistent) w1 s1"
    timed = [{"kwargs": {"XBLOCK": 1}, "num_warps": 1, "num_stages": 1, "ms": 0.004},
             {"kwargs": {"XBLOCK": 8}, "num_warps": 4, "num_stages": 1, "ms": 0.005}]
    looped = probe.launch_config(
        SimpleNamespace(**{**vars(autotuner), "heuristic_type": "HeuristicType.REDUCTION",
                           "inductor_meta": {"kernel_name": "triton_red_0"}}), timed)
    assert looped["kernel"] == "triton_red_0" and looped["persistent_r0_block"] is None
    assert probe.config_text({"kernels": [looped]}) == "XBLOCK=1 w1 s1, best of 2 timed"
    autotuner.launchers = [launcher, launcher]  # not autotuned yet: no single pick
    assert probe.launch_config(autotuner)["chosen"] is None
    assert probe.config_text({"kernels": None, "note": "x"}) == "Inductor's config not found"


class _Launcher:  # hashable, as Inductor's launchers are (they key its timings)
    def __init__(self, config):
        self.config = config


def test_the_autotune_log_records_inductors_timings_and_puts_the_method_back(monkeypatch):
    import triton
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    fast = _Launcher(triton.Config({"XBLOCK": 1}, num_warps=1, num_stages=1))
    slow = _Launcher(triton.Config({"XBLOCK": 8}, num_warps=4, num_stages=1))
    stub = lambda tuner, *args: {fast: 0.004, slow: 0.005}
    monkeypatch.setattr(CachingAutotuner, "benchmark_all_configs", stub)
    tuner = SimpleNamespace()
    with probe.AutotuneLog() as log:
        assert CachingAutotuner.benchmark_all_configs(tuner, "x") == {fast: 0.004, slow: 0.005}
    assert CachingAutotuner.benchmark_all_configs is stub
    assert log.timings == {id(tuner): [
        {"kwargs": {"XBLOCK": 1}, "num_warps": 1, "num_stages": 1, "ms": 0.004},
        {"kwargs": {"XBLOCK": 8}, "num_warps": 4, "num_stages": 1, "ms": 0.005}]}
    CachingAutotuner.benchmark_all_configs(SimpleNamespace())  # closed: nothing more recorded
    assert len(log.timings) == 1


class _Gone:
    pass


def test_autotuners_are_found_in_the_compiled_modules_and_dead_proxies_are_passed_over(
    monkeypatch,
):
    """The compiled graph's module holds its kernels as globals; the collector also tracks weak
    proxies, whose referent may be gone (on the H200 that once stopped the script)."""
    from torch._inductor.codecache import PyCodeCache

    before = probe.inductor_autotuners()
    kernel = SimpleNamespace(fn=print, configs=[], launchers=[])
    module = ModuleType("compiled_graph")
    module.triton_per_fused_0 = kernel
    module.not_a_kernel = SimpleNamespace(launchers=[])  # no fn, no configs
    module.dead = weakref.proxy(_Gone())  # a proxy whose referent is already gone
    monkeypatch.setattr(PyCodeCache, "modules", [module], raising=False)
    found = probe.inductor_autotuners()
    assert set(found) - set(before) == {id(kernel)}
    assert found[id(kernel)] == (kernel, "PyCodeCache")
    pick = probe.inductor_pick(before, {id(kernel): [{"ms": 1.0}]})
    assert [k["found_in"] for k in pick["kernels"]] == ["PyCodeCache"]
    assert pick["kernels"][0]["benchmarked"] == [{"ms": 1.0}]
    assert pick["note"] == "not settled on one config: print"
    assert probe.inductor_pick(found)["kernels"] is None  # nothing new since


def test_the_table_sorts_by_median_and_stars_the_reference_plan():
    samples = {"compile": [0.0070, 0.0071], "reference": [0.0074, 0.0073],
               "plan 1x8": [0.0075, 0.0072], "plan 2x8": [0.0069, 0.0070]}  # fmt: skip
    summary = probe.summarize(samples)
    own = RowPlan(1024, 1, 8, chunked=False)
    variants = {
        "reference": {"kind": "reference", "plan": None},
        "plan 1x8": {"kind": "plan", "plan": own},
        "plan 2x8": {"kind": "plan", "plan": RowPlan(1024, 2, 8, chunked=False)},
        "compile": {"kind": "compile", "plan": None, "baseline": "composition"},
    }
    case = {"label": "rmsnorm 1024x1024 float32", "variants": variants,
            "reference_plan": own, "inductor": {"kernels": None, "note": "none"}}  # fmt: skip
    record = probe.case_record(case, (1024, 1024), probe.ops.dtype_from_name("float32"), summary)
    assert record["reference_plan"] == asdict(own)
    assert [r["variant"] for r in record["variants"] if r["reference_plan"]] == ["plan 1x8"]
    body = probe.table_lines([record])[4:]
    assert [line.split()[0] for line in body] == ["plan", "compile", "plan", "reference"]
    assert body[0].split()[1] == "2x8" and "*" not in body[0]
    assert body[2].split()[1:3] == ["1x8", "*"] and "[1x8]" in body[3]


def test_the_cache_argument_chooses_the_timer_mode():
    """Cold by default, as the question it asks; warm on request, the same plans."""
    assert probe.parse_args([]).cache == "cold"
    assert probe.parse_args(["--cache", "warm"]).cache == "warm"
    assert probe.table_lines([], "warm")[0].startswith("warm L2")


@pytest.mark.parametrize("name", sorted(probe.REWRITES))
@pytest.mark.parametrize(("n_rows", "rows_per_program"), [(6, 1), (7, 2), (8, 2)])
def test_each_rewrite_applies_and_matches_the_reference(name, n_rows, rows_per_program,
                                                        tmp_path):  # fmt: skip
    """Every rewrite finds its text once in the current forward, and the rewritten forward, on
    one-row and stacked plans (7 rows: the last program half past the end), gives the
    reference's output (here, in the interpreter)."""
    import torch

    module = probe.rewritten_forwards([name], tmp_path)[name]
    source = (tmp_path / f"rmsnorm_{name.replace('-', '_')}.py").read_text()
    assert source != (ROOT / "reference" / "kernels" / "rmsnorm.py").read_text()
    generator = torch.Generator().manual_seed(5)
    x, residual = (torch.randn(n_rows, 1024, generator=generator) for _ in range(2))
    weight = torch.randn(1024, generator=generator)
    plan = RowPlan(1024, rows_per_program, 2, chunked=False)
    expected = rmsnorm.rmsnorm_fwd(x, residual, weight, 1e-6, plan=plan)[0]
    got = module.rmsnorm_fwd(x, residual, weight, 1e-6, plan=plan)[0]
    torch.testing.assert_close(got, expected, rtol=0, atol=0)


def test_the_row_mask_rewrite_masks_every_plan(tmp_path):
    """``row-mask`` is the forward before the rule: the mask on, whatever the row count."""
    source = probe.rewritten_forwards(["row-mask"], tmp_path)["row-mask"].__file__
    text = Path(source).read_text()
    assert "MASK_ROWS=True," in text and "MASK_ROWS=_mask_rows(" not in text


def test_rewritten_variants_take_whole_row_plans_only():
    """Rewrites change the whole-row path: the variants pair them with every whole-row plan,
    stacked or not, never with a chunked one, and never mark them the reference's."""
    spec = probe.ops.get("rmsnorm")
    plans = [RowPlan(1024, 1, 2, chunked=False), RowPlan(1024, 2, 8, chunked=False),
             RowPlan(32768, 1, 32, chunked=True)]  # fmt: skip
    variants = probe.case_variants(spec, plans, {"all": object()})
    assert "plan 1x2 all" in variants and "plan 2x8 all" in variants
    assert "plan chunk 32768 w32 all" not in variants and "plan chunk 32768 w32" in variants
    assert {variants[k]["kind"] for k in ("plan 1x2 all", "plan 2x8 all")} == {"rewritten"}


def test_reference_plan_only_times_no_grid():
    args = probe.parse_args(["--reference-plan-only", "--rewrites", "row-mask"])
    assert args.reference_plan_only and args.rewrites == ["row-mask"]
    reference, plans = probe.candidate_plans(128, 2, (), ())
    assert plans == [reference] == [rmsnorm.forward_plan(1, 128, 2)]


def test_int32_offsets_refuse_a_tensor_of_2_to_the_31_elements(tmp_path):
    output = tmp_path / "out.json"
    done = _run("--shapes", "65536x32768", "--rewrites", "all", "--output", output)
    assert done.returncode == 2 and not output.exists()
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--rewrites" in lines[0] and "65536x32768" in lines[0]
