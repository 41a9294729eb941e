"""Is the shape suite (``learning.bench.suite``) what the issue asks for: drawn from the registry
and a seed, spanning the ranges users pass, within its caps, in parts that each fit one GPU
call, and runnable by ``kernel-bench --suite`` into a report that validates?"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import pytest
import torch

import learning.report
from learning import ops
from learning.bench import BenchConfig, cli, run, suite
from learning.bench.config import case_key, select
from learning.report import sweeps
from learning.report.fingerprint import REPO_ROOT

SEEDS = (0, 1, 7)


def _keys(drawn) -> list[str]:
    return [case_key(spec.name, shape, dtype) for spec, shape, dtype in drawn]


def _by_op(family: suite.Family, seed: int) -> dict[str, list[tuple]]:
    """The family's own cases (the ceiling's case aside), shapes and dtypes by op."""
    found = defaultdict(list)
    for spec, shape, dtype in suite.cases(family.name, seed):
        if family.holds(spec):
            found[spec.name].append((shape, dtype))
    return found


def _prime(n: int) -> bool:
    return n > 1 and all(n % d for d in range(2, int(n**0.5) + 1))


def _family(axes: tuple[str, ...], training: bool) -> suite.Family:
    """The family of these axes, forward or training."""
    for family in suite.FAMILIES:
        if tuple(axis.name for axis in family.axes) == axes and family.training == training:
            return family
    raise LookupError(axes)


# --------------------------------------------------------------------------- the seed


def test_a_seed_gives_one_list_and_another_seed_another():
    """The same seed draws the same cases; a second seed shares no case with the first but the
    ceiling's, which every row part carries."""
    for name in suite.SUITES:
        assert _keys(suite.cases(name, 0)) == _keys(suite.cases(name, 0))
    first = {key for name in suite.PARTS for key in _keys(suite.cases(name, 0))}
    second = {key for name in suite.PARTS for key in _keys(suite.cases(name, 1))}
    assert first != second
    assert first & second <= {sweeps.CEILING_KEY}


def test_the_list_does_not_depend_on_the_process():
    """Drawn in another process with another hash seed, the list is the same (no ``hash()``,
    no set order, no global generator)."""
    code = (
        "import json; from learning.bench import suite; "
        "print(json.dumps([[s.name, list(shape), d] for s, shape, d in suite.cases('gemm', 3)]))"
    )
    environment = {**os.environ, "PYTHONHASHSEED": "12345", "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO_ROOT, env=environment, check=True)  # fmt: skip
    here = [[s.name, list(shape), d] for s, shape, d in suite.cases("gemm", 3)]
    assert json.loads(done.stdout) == here


# --------------------------------------------------------------------------- the ranges


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("training", [False, True], ids=["forward", "training"])
def test_every_row_op_spans_the_widths_and_row_counts(seed, training):
    """Each row op: widths from 32 to 262,144 with one below 64 and one above 131,072, powers
    of two, multiples of 8 between them, odd widths and a prime width in four; row counts
    from 1 to 10^6 with one of 1 and one of at least 10^5; every dtype it supports."""
    family = _family(("M", "N"), training)
    found = _by_op(family, seed)
    assert set(found) == {spec.name for spec in suite.members(family)} != set()
    for op, drawn in found.items():
        widths = [shape[1] for shape, _ in drawn]
        rows = [shape[0] for shape, _ in drawn]
        assert min(widths) < 64 and max(widths) > 131072, op
        assert all(32 <= w <= 262144 for w in widths) and all(1 <= m <= 10**6 for m in rows)
        assert any(w & (w - 1) == 0 for w in widths), f"{op}: no power of two"
        assert any(w % 8 == 0 and w & (w - 1) for w in widths), f"{op}: none between powers"
        assert any(w % 2 and not _prime(w) for w in widths), f"{op}: no odd width"
        assert sum(map(_prime, widths)) >= len(widths) // 4, f"{op}: too few prime widths"
        assert 1 in rows and max(rows) >= 10**5, op
        wanted = {ops.dtype_name(d) for d in ops.OPS[op].dtypes}
        assert {dtype for _, dtype in drawn} == wanted, op


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("training", [False, True], ids=["forward", "training"])
def test_every_gemm_spans_skinny_k_heavy_vector_and_irregular_shapes(seed, training):
    """Each GEMM op: M, N, K within 1 to 16,384, some dimension past 8,192; M <= 256 with
    K >> M N (K >= 16 M N, and at least 1,024); skinny, large and matrix-vector (M = 1)
    shapes; prime dimensions; fp16, bf16 and fp32."""
    family = _family(("M", "N", "K"), training)
    found = _by_op(family, seed)
    assert set(found) == {spec.name for spec in suite.members(family)} != set()
    for op, drawn in found.items():
        shapes = [shape for shape, _ in drawn]
        assert all(1 <= d <= 16384 for shape in shapes for d in shape), op
        assert max(d for shape in shapes for d in shape) > 8192, op
        assert any(m <= 256 and k >= max(1024, 16 * m * n) for m, n, k in shapes), op
        assert any(m <= 256 and n >= 1024 and k >= 1024 for m, n, k in shapes), f"{op}: skinny"
        assert any(m == 1 for m, _, _ in shapes), f"{op}: no matrix-vector product"
        assert any(min(n, k) >= 1024 and m >= 1024 for m, n, k in shapes), f"{op}: no large"
        assert sum(_prime(d) for shape in shapes for d in shape) >= len(shapes) // 4, op
        assert {dtype for _, dtype in drawn} == {"float16", "bfloat16", "float32"}, op


def test_the_suite_holds_at_least_150_cases_in_its_parts():
    """The parts together hold the families' cases, each once, and at least 150 of them."""
    in_parts = [key for name in suite.PARTS for key in _keys(suite.cases(name, 0))]
    whole = [key for family in suite.FAMILIES for key in _keys(suite.cases(family.name, 0))]
    assert sorted(set(in_parts)) == sorted(set(whole))
    assert len(in_parts) - in_parts.count(sweeps.CEILING_KEY) == len(set(in_parts)) - 1
    assert len(set(in_parts)) >= 150


# --------------------------------------------------------------------------- the caps


@pytest.mark.parametrize("seed", SEEDS)
def test_every_case_fits_the_byte_cap_and_stays_below_2_to_the_31_elements(seed):
    """Inputs and outputs in float64 within CASE_BYTES_CAP (so the float64 oracle, its
    intermediates and every baseline fit an 80 GB card), no tensor of 2^31 elements or more,
    and one call within MAX_CALL_S at the cost model's rates."""
    assert suite.CASE_BYTES_CAP * 8 <= 80 * 10**9
    for family in suite.FAMILIES:
        for spec, shape, dtype in suite.cases(family.name, seed):
            key = case_key(spec.name, shape, dtype)
            assert spec.logical_bytes(shape, torch.float64) <= suite.CASE_BYTES_CAP, key
            if len(shape) == 3:
                m, n, k = shape
                assert max(m * k, k * n, m * n) < 2**31, key
            else:
                assert shape[0] * shape[1] < 2**31, key
            assert suite.call_s(spec, shape, dtype) <= suite.MAX_CALL_S, key


def test_the_caps_bind(monkeypatch):
    """Lowering the cap shrinks the cases that met it, so it is the cap that keeps a case
    small, not chance."""
    before = _keys(suite.cases("rows", 0))
    monkeypatch.setattr(suite, "CASE_BYTES_CAP", 2**24)
    after = suite.cases("rows", 0)
    assert _keys(after) != before
    assert all(
        spec.logical_bytes(shape, torch.float64) <= 2**24 or spec.name == sweeps.CEILING_CASE[0]
        for spec, shape, _ in after
    )


# --------------------------------------------------------------------------- the parts


def test_each_part_is_a_sweep_that_fits_one_gpu_call(tmp_path):
    """Every part is a sweep, warm and cold, not yet recorded; ``stale`` estimates each within
    the call budget, and a part that holds row cases carries the ceiling's case."""
    names = {spec.name for spec in sweeps.SUITE_SWEEPS}
    assert names == {f"shapes-{p}{tail}" for p in suite.PARTS for tail in ("", "-cold")}
    assert names <= set(sweeps.SWEEPS) and names <= sweeps.NOT_YET_RECORDED
    states = [sweeps.sweep_state(tmp_path, name, REPO_ROOT) for name in sorted(names)]
    for state in states:
        assert state.whole and sweeps.START_S < state.seconds <= sweeps.CALL_BUDGET_S, state
    for call in sweeps.plan(states):
        assert sum(state.seconds for state in call) <= sweeps.CALL_BUDGET_S
    for part in suite.PARTS:
        drawn = suite.cases(part, 0)
        rows = any(len(shape) == 2 for _, shape, _ in drawn)
        assert (sweeps.CEILING_KEY in _keys(drawn)) == rows, part


def test_a_stale_case_of_a_part_re_records_alone():
    """The command that re-records one case of a part selects exactly that case (and the
    ceiling's, which the plan adds), with the part's suite and seed."""
    spec = sweeps.SWEEPS["shapes-rows-training"]
    wanted = _keys(suite.cases("rows-training", 0))[3]
    command = spec.command("out.json", [wanted, sweeps.CEILING_KEY])
    config = cli.parse(command[3:])
    assert (config.suite, config.suite_seed, config.op) == ("rows-training", 0, None)
    assert _keys(select(config, "cuda")) == [wanted, sweeps.CEILING_KEY]


# --------------------------------------------------------------------------- the registry


def test_every_op_with_a_family_is_in_the_suite_and_no_other():
    """The ops drawn are exactly the registry's ops some family holds (attention's
    B x H x N x D is in none)."""
    drawn = {spec.name for name in suite.PARTS for spec, _, _ in suite.cases(name, 0)}
    held = {name for name, spec in ops.OPS.items() if any(f.holds(spec) for f in suite.FAMILIES)}
    assert drawn == held
    assert {name for name, spec in ops.OPS.items() if spec.shape_names == ("B", "H", "N", "D")}
    assert held < set(ops.NAMES)


def test_an_op_added_to_the_registry_joins_its_family_and_moves_no_other(monkeypatch):
    """A new row op (a copy of one, renamed) is drawn with the rows family; every other op's
    cases stay as they were, since each op draws from its own generator."""
    before = _keys(suite.cases("rows", 0))
    twin = replace(ops.OPS[suite.members(suite.FAMILIES[0])[-1].name], name="row_twin")
    registry = {**dict(ops.OPS.items()), "row_twin": twin}
    monkeypatch.setattr(ops, "OPS", registry)
    after = _keys(suite.cases("rows", 0))
    added = [key for key in after if key.startswith("row_twin/")]
    assert len(added) == suite.FAMILIES[0].cases_per_op
    assert [key for key in after if key not in added] == before


# --------------------------------------------------------------------------- kernel-bench
# (a bad suite request: tests/learning/bench/test_bench_cli.py, BAD_LINES)


@pytest.mark.parametrize("family", suite.FAMILIES, ids=lambda f: f.name)
def test_a_cpu_run_of_the_suite_writes_a_report_that_validates(family, make_impl, tmp_path):
    """kernel-bench on the CPU runs a family's first case (scaled down for the interpreter)
    and the ceiling's where it has one; the report records the suite and its seed, and
    reading those back selects the same cases."""
    from learning.grade.reports import bench_command
    from learning.report.__main__ import _selected

    drawn = suite.cases(family.name, 5, device="cpu")
    assert all(max(shape) <= 1024 for _, shape, _ in drawn)
    chosen = tuple(dict.fromkeys(_keys(drawn)[:1] + _keys(drawn)[-1:]))
    config = BenchConfig(
        op=None, suite=family.name, suite_seed=5, cases=chosen, output=tmp_path / "suite.json",
        samples=2, visits=1, device="cpu", quiet=True, reference_package=make_impl(),
    )  # fmt: skip
    report = run(config)
    assert report.complete and learning.report.validate(report.data) == []
    settings = report.data["settings"]
    assert (settings["op"], settings["suite"], settings["suite_seed"]) == (None, family.name, 5)
    assert [sweeps.case_key(case) for case in report.data["cases"]] == list(chosen)
    assert _selected(report.data) == _keys(suite.cases(family.name, 5))  # planned for a GPU
    rerun = cli.parse(bench_command(report.data, device="cpu").split()[1:])
    assert _keys(select(rerun, "cpu")) == _keys(drawn)  # the grader's command: the same suite
    without = {**report.data, "settings": {**settings, "suite": None}}
    assert any("settings" in problem for problem in learning.report.validate(without))


def test_the_cpu_run_from_the_command_line(make_impl, tmp_path, monkeypatch, capsys):
    """``kernel-bench --suite ... --device cpu`` runs and writes its report."""
    drawn = _keys(suite.cases("rows-2", 0, device="cpu"))
    line = ["--suite", "rows-2", "--device", "cpu", "--case", drawn[0], "--samples", "2",
            "--visits", "1", "--output", str(tmp_path / "r.json")]  # fmt: skip
    config = replace(cli.parse(line), reference_package=make_impl())
    monkeypatch.setattr(cli, "parse", lambda argv: config)
    assert cli.main(line) == 0
    written = json.loads(Path(tmp_path / "r.json").read_text())
    assert written["settings"]["suite"] == "rows-2" and written["settings"]["suite_seed"] == 0
