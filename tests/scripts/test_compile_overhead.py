"""Does scripts/compile_overhead.py refuse a CPU and bad input, list the right variants, and
register custom ops that compute what the reference wrappers compute? (CPU)"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import warm_python

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "compile_overhead.py"
sys.path.insert(0, str(ROOT / "scripts"))

import compile_overhead as co  # noqa: E402  (imports learning first: it selects the backend)

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402
from learning.runtime import interpreting  # noqa: E402


def _run(*args):
    return warm_python.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True,
                           text=True, timeout=120, cwd=ROOT)  # fmt: skip


@pytest.mark.parametrize("args", [["--calls", "0"], ["--calls", "many"], ["--ops", "nope"]])
def test_bad_arguments_are_one_line_and_exit_2(tmp_path, args):
    output = tmp_path / "out.json"
    done = _run(*args, "--output", output)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith("compile_overhead: error: ")
    assert done.stdout == "" and not output.exists()


def test_arguments_parse():
    args = co.parse_args(["--ops", "softmax", "matmul", "--calls", "10", "--no-compile"])
    assert args.ops == ["softmax", "matmul"] and args.calls == 10 and args.no_compile
    assert co.parse_args([]).ops == list(co.SHAPES) and not co.parse_args([]).warm_cache


@pytest.mark.parametrize("op", list(co.SHAPES))
def test_variants_cover_every_layer_and_the_registry_baselines(op):
    """Eager baselines from the registry first, then the reference, the custom op and the two
    compiled variants; --no-compile drops only the compiled ones."""
    spec = ops.get(op)
    found = co.variants(op)
    names = [v.name for v in found]
    assert len(names) == len(set(names))
    eager = [v for v in found if v.kind == "eager"]
    assert len(eager) == len(spec.baselines)
    assert [v.make() for v in eager] == list(spec.baselines.values())
    assert names[len(eager):] == [co.REFERENCE, co.CUSTOM_OP, co.COMPILE_CUSTOM_OP,
                                  co.COMPILE_EAGER]  # fmt: skip
    reference = next(v for v in found if v.name == co.REFERENCE)
    assert reference.make() is spec.kernel_function("reference")
    without = co.variants(op, compile=False)
    assert [v.name for v in without] == names[: len(eager) + 2]
    assert all(v.kind != "compiled" for v in without)
    assert spec.shape_label(co.SHAPES[op]) in ("1024x1024", "1024x1024x1024")


def test_positional_inputs_follow_the_signatures():
    inputs = ops.get("rmsnorm").inputs((4, 8), torch.float16, 0, "cpu")
    args = co.positional(inputs)
    assert args[0] is inputs["x"] and args[1] is inputs["residual"]
    assert args[2] is inputs["weight"] and args[3] == inputs["eps"]


def test_bound_names_the_slower_side():
    assert co.bound(30.0, 2.5) == "host"
    assert co.bound(8.0, 100.0) == "device"
    assert co.bound(None, 2.0) == "-" and co.bound(2.0, None) == "-"


def test_overheads_subtract_each_layer_from_the_one_below():
    rows = [
        {"op": "softmax", "variant": "torch.softmax", "kind": "eager", "host_us_per_call": 8.0},
        {"op": "softmax", "variant": co.REFERENCE, "kind": "reference", "host_us_per_call": 20.0},
        {"op": "softmax", "variant": co.CUSTOM_OP, "kind": "custom op", "host_us_per_call": 30.0},
        {"op": "softmax", "variant": co.COMPILE_CUSTOM_OP, "kind": "compiled",
         "host_us_per_call": 45.0, "host_us_guards_skipped": 41.5},
        {"op": "softmax", "variant": co.COMPILE_EAGER, "kind": "compiled",
         "host_us_per_call": None},  # failed: no difference is reported
        {"op": "rmsnorm", "variant": "eager composition", "kind": "eager",
         "host_us_per_call": 90.0},
        {"op": "rmsnorm", "variant": co.COMPILE_EAGER, "kind": "compiled",
         "host_us_per_call": 40.0},
    ]  # fmt: skip
    layers = {(x["op"], x["layer"]): x["host_us"] for x in co.overheads(rows)}
    assert layers == {
        ("softmax", "custom op - reference"): pytest.approx(10.0),
        ("softmax", "compile(custom op) - custom op"): pytest.approx(15.0),
        ("softmax", "guards of compile(custom op)"): pytest.approx(3.5),
        ("rmsnorm", "compile(eager) - eager composition"): pytest.approx(-50.0),
    }


@pytest.mark.skipif(not interpreting(), reason="runs the reference kernels on CPU tensors")
def test_custom_ops_compute_what_the_wrappers_compute():
    """Does each custom op return the reference wrapper's output (interpreter, small shapes)?"""
    library = co.library_ops()
    assert set(library) == set(co.SHAPES)
    assert co.library_ops() is library  # registered once per process
    for op, shape in (("softmax", (16, 256)), ("rmsnorm", (16, 256)), ("matmul", (64, 64, 64))):
        spec = ops.get(op)
        inputs = spec.inputs(shape, torch.float16, 0, "cpu")
        args = co.positional(inputs)
        got = library[op](*args)
        assert torch.equal(got, spec.kernel_function("reference")(*args)), op


def test_fake_implementations_give_the_output_shape():
    """Can the compiler trace the custom ops: right shape and dtype, and no kernel run?"""
    from torch._subclasses.fake_tensor import FakeTensorMode

    library = co.library_ops()
    with FakeTensorMode():
        x = torch.empty((1024, 512), dtype=torch.float16)
        w = torch.empty((512,), dtype=torch.float16)
        b = torch.empty((512, 96), dtype=torch.float16)
        assert library["softmax"](x).shape == (1024, 512)
        y = library["rmsnorm"](x, x, w, 1e-6)
        assert y.shape == (1024, 512) and y.dtype == torch.float16
        assert library["matmul"](x, b).shape == (1024, 96)


def test_paired_guards_take_precedence_over_a_difference_of_medians():
    rows = [
        {"op": "softmax", "variant": co.COMPILE_EAGER, "kind": "compiled",
         "host_us_per_call": 50.0, "host_us_guards_skipped": 44.0, "guards_us": 5.2},
    ]  # fmt: skip
    (layer,) = co.overheads(rows)
    assert layer["layer"] == f"guards of {co.COMPILE_EAGER}" and layer["host_us"] == 5.2


def test_guards_are_timed_in_pairs_checked_and_skipped(monkeypatch):
    """A stand-in stance and clock: a call costs 3 us with the guards checked, 2 skipped."""
    import contextlib

    now, skipping, order = [0.0], [False], []

    @contextlib.contextmanager
    def stance(**kwargs):
        assert kwargs == {"skip_guard_eval_unsafe": True}
        skipping[0] = True
        try:
            yield
        finally:
            skipping[0] = False

    def call():
        now[0] += 2e-6 if skipping[0] else 3e-6
        order.append(skipping[0])

    monkeypatch.setattr(torch.compiler, "set_stance", stance)
    monkeypatch.setattr(co.time, "perf_counter", lambda: now[0])
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    measured = co.guards_paired(call, calls=4, pairs=6)
    assert measured["host_us_guards_skipped"] == pytest.approx(2.0)
    assert measured["guards_us"] == pytest.approx(1.0)
    samples = [order[k] for k in range(1, len(order), 4)]  # after the one trial call
    pairs = {(samples[k], samples[k + 1]) for k in range(0, 12, 2)}
    assert pairs == {(True, False), (False, True)}  # both orders drawn (seed 0)

    def no_switch(**kwargs):
        raise RuntimeError("no such stance")

    monkeypatch.setattr(torch.compiler, "set_stance", no_switch)
    assert co.guards_paired(call, calls=4, pairs=2) is None


def test_an_ops_variants_are_timed_in_turns_and_failures_stay_untimed(monkeypatch):
    seen = {}

    def interleaved(calls, per_sample, rounds, seed):
        seen["names"], seen["rounds"] = list(calls), rounds
        return {name: 10.0 + k for k, name in enumerate(calls)}

    monkeypatch.setattr(co.timing, "interleaved_host_us", interleaved)
    monkeypatch.setattr(co, "guards_paired",
                        lambda call, calls, pairs: {"host_us_guards_skipped": 9.0,
                                                    "guards_us": 1.5})  # fmt: skip
    rows = [
        {"variant": "torch.softmax", "kind": "eager", "graph_us": 5.0},
        {"variant": co.REFERENCE, "kind": "reference", "graph_us": 2.0},
        {"variant": co.COMPILE_EAGER, "kind": "compiled", "graph_us": 2.5},
        {"variant": co.CUSTOM_OP, "kind": "custom op", "graph_us": None},  # failed
    ]  # fmt: skip
    for row in rows:
        row.update(host_us_per_call=None, bound="-", host_us_guards_skipped=None,
                   guards_us=None)  # fmt: skip
    calls = {row["variant"]: object() for row in rows[:3]}
    co.measure_host(rows, calls, co.parse_args(["--rounds", "5"]))
    assert seen == {"names": ["torch.softmax", co.REFERENCE, co.COMPILE_EAGER], "rounds": 5}
    assert [row["host_us_per_call"] for row in rows] == [10.0, 11.0, 12.0, None]
    assert rows[2]["guards_us"] == 1.5 and rows[0]["guards_us"] is None
    assert rows[0]["bound"] == "host" and rows[3]["bound"] == "-"
