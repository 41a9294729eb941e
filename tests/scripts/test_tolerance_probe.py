"""Does scripts/tolerance_probe.py measure the share of the tolerance honestly, and refuse bad
input? (CPU: tiny shapes, a few trials under the interpreter.)"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest
import warm_python

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "tolerance_probe.py"
sys.path.insert(0, str(ROOT / "scripts"))

import tolerance_probe  # noqa: E402  (imports learning first: it selects the backend)

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402
from learning.correctness import compare  # noqa: E402
from learning.report import is_record, validate_file  # noqa: E402
from learning.runtime import interpreting  # noqa: E402


def _run(*args):
    return warm_python.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True,
                           text=True, timeout=300, cwd=ROOT, check=False)  # fmt: skip


def test_probe_writes_a_record_with_fractions_within_the_tolerance(tmp_path: Path):
    """A real run (softmax_train, float32, 3 trials at 8x64): exit 0, a valid record whose
    every fraction lies in (0, 1], with the seeds and scales that reproduce each trial."""
    output = tmp_path / "probe.json"
    args = ["--op", "softmax_train", "--dtypes", "float32", "--shape", "8x64", "--trials", "3",
            "--seed", "7", "--output", output]  # fmt: skip
    done = _run(*args)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert lines[-1] == f"wrote {output}" and lines[-2].startswith("3 trials, 0 failed")
    assert any(line.split()[:3] == ["softmax_train", "float32", "grad_x"] for line in lines)

    record = json.loads(output.read_text())
    assert is_record(record) and record["script"] == "scripts/tolerance_probe.py"
    assert record["argv"] == list(map(str, args))
    for name in ("scripts/tolerance_probe.py", "learning/correctness.py", "learning/ops/spec.py",
                 "reference/kernels/softmax.py"):  # fmt: skip
        assert name in record["fingerprint"]["files"], name
    if importlib.util.find_spec("jsonschema"):  # the validator needs it; the GPU image lacks it
        assert validate_file(output) == []
    data = record["data"]
    assert {"environment", "seed", "trials", "summaries", "trial_rows", "skipped"} <= set(data)
    assert data["seed"] == 7 and data["trials"] == 3 and data["skipped"] == []

    (summary,) = data["summaries"]
    assert (summary["op"], summary["dtype"], summary["output"]) == (
        "softmax_train", "float32", "grad_x",
    )  # fmt: skip
    assert summary["trials"] == 3 and summary["failures"] == 0 and summary["shapes"] == ["8x64"]
    assert 0 < summary["median_fraction"] <= summary["p99_fraction"] <= summary["max_fraction"] <= 1
    assert summary["reproduce"].endswith(f"--seed {summary['worst_seed']} --trials 1")

    rows = data["trial_rows"]
    assert [row["seed"] for row in rows] == [7, 8, 9]
    for row in rows:
        assert row["shape"] == "8x64" and row["failed"] == [] and row["reason"] == ""
        assert 0 < row["fractions"]["grad_x"] <= 1
        assert 0.25 <= row["input_scale"] <= 4 and 0.25 <= row["grad_scale"] <= 4
    assert summary["max_fraction"] == max(row["fractions"]["grad_x"] for row in rows)


def test_a_trial_is_reproduced_by_its_seed():
    """Do the same op, dtype, shape and seed give the same inputs, scales and fractions?"""
    spec = ops.OPS["softmax_train"]
    function = spec.kernel_function("reference")
    first, second = (
        tolerance_probe.run_trial(spec, function, (4, 32), torch.float16, 0, 11, "cpu")
        for _ in range(2)
    )
    assert first == second and 0 < first["fractions"]["grad_x"] <= 1
    other = tolerance_probe.run_trial(spec, function, (4, 32), torch.float16, 0, 12, "cpu")
    assert other["input_scale"] != first["input_scale"]
    inputs = tolerance_probe.trial_inputs(spec, (4, 32), torch.float16, 11, "cpu")
    plain = spec.inputs((4, 32), torch.float16, 11, "cpu")
    input_scale, grad_scale = tolerance_probe.trial_scales(11)
    assert inputs["x"].requires_grad and inputs["x"].dtype == torch.float16
    assert torch.equal(inputs["x"].detach(), (plain["x"].detach().float() * input_scale).half())
    assert torch.equal(inputs["grad_output"], (plain["grad_output"].float() * grad_scale).half())


def _softmax_case(dtype=torch.float32):
    spec = ops.OPS["softmax_train"]
    inputs = spec.inputs((4, 32), dtype, 3, "cpu")
    expected = spec.expected(inputs)
    return spec, expected, tuple(e.to(dtype) for e in expected)


def test_the_fraction_is_the_comparisons_own_tolerance_used():
    """Is the fraction exactly learning.correctness.compare's worst |error| / bound?"""
    spec, expected, outputs = _softmax_case(torch.float16)
    (verdict,) = tolerance_probe.output_verdicts(spec, outputs, expected, torch.float16).values()
    direct = compare(outputs[0], expected[0], spec.tolerances[torch.float16],
                     dtype=torch.float16, label="grad_x")  # fmt: skip
    assert verdict == direct and verdict.passed
    assert tolerance_probe.fraction_used(verdict) == direct.tolerance_used
    assert 0 < tolerance_probe.fraction_used(verdict) < 1  # fp16 rounding alone


def test_a_deliberately_wrong_gradient_uses_more_than_the_tolerance():
    """One gradient element moved by twice its allowed error: fraction about 2, a failure."""
    spec, expected, outputs = _softmax_case()
    tolerance = spec.tolerances[torch.float32]
    ref = expected[0]
    bound = tolerance.atol * float(ref.abs().max()) + tolerance.rtol * abs(float(ref[1, 5]))
    wrong = outputs[0].clone()
    wrong[1, 5] = float(ref[1, 5]) + 2 * bound
    verdicts = tolerance_probe.output_verdicts(spec, (wrong,), expected, torch.float32)
    fraction = tolerance_probe.fraction_used(verdicts["grad_x"])
    assert not verdicts["grad_x"].passed and fraction == pytest.approx(2.0, rel=1e-3)

    nan = outputs[0].clone()
    nan[0, 0] = float("nan")
    (verdict,) = tolerance_probe.output_verdicts(spec, (nan,), expected, torch.float32).values()
    assert not verdict.passed and tolerance_probe.fraction_used(verdict) == math.inf

    too_many = tolerance_probe.output_verdicts(spec, outputs * 2, expected, torch.float32)
    assert list(too_many) == ["grad_x"] and not too_many["grad_x"].passed


def test_a_raising_kernel_fails_every_output():
    spec = ops.OPS["rmsnorm_train"]

    def broken(**_):
        raise RuntimeError("boom")

    row = tolerance_probe.run_trial(spec, broken, (4, 32), torch.float32, 0, 1, "cpu")
    assert row["failed"] == ["grad_x", "grad_residual", "grad_weight"]
    assert set(row["fractions"].values()) == {math.inf} and "boom" in row["reason"]
    (summary, *_) = tolerance_probe.summarize(spec, torch.float32, [{**row, "op": spec.name}])
    assert summary["failures"] == 1 and summary["max_fraction"] == math.inf


def test_percentile_interpolates_like_numpy():
    assert tolerance_probe.percentile([3.0, 1.0, 2.0, 4.0], 50) == 2.5
    assert tolerance_probe.percentile([1.0, 2.0], 99) == pytest.approx(1.99)
    assert tolerance_probe.percentile([5.0], 99) == 5.0
    assert tolerance_probe.percentile([1.0, math.inf, math.inf], 99) == math.inf


@pytest.mark.skipif(not interpreting(), reason="the skip is for the interpreter only")
def test_interpreter_skips_bf16_gemm_with_a_note(capsys):
    assert tolerance_probe.main(["--op", "matmul_train", "--dtypes", "bfloat16"]) == 0
    out = capsys.readouterr().out
    assert "note: matmul_train bfloat16 skipped" in out and "#11584" in out
    assert "0 trials, 0 failed, 1 case(s) skipped" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--op", "nope"], "unknown op 'nope'"),
        (["--dtypes", "int8"], "unsupported dtype 'int8'"),
        (["--trials", "0"], "--trials must be at least 1, got 0"),
        (["--trials", "many"], "argument --trials: invalid int value"),
        (["--shape", "16x"], "--shape '16x' is not dimensions"),
        (["--shape", "16x0"], "--shape '16x0': every dimension must be positive"),
        (["--op", "matmul_train", "--shape", "16x64"], "--shape gives no MxNxK shape"),
        (["--seed", "-1"], "--seed must be non-negative"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_writing_nothing(tmp_path, capsys, args, message):
    output = tmp_path / "probe.json"
    assert tolerance_probe.main([*args, "--output", str(output)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"tolerance_probe: {message}"), captured.err
    assert len(captured.err.strip().splitlines()) == 1
    assert not output.exists() and list(tmp_path.iterdir()) == []


def test_bad_input_from_the_command_line(tmp_path):
    """The same through the real entry point: no traceback, exit 2, nothing written."""
    output = tmp_path / "probe.json"
    done = _run("--op", "softmax_train", "--trials", "0", "--output", output)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == "tolerance_probe: --trials must be at least 1, got 0"
    assert not output.exists()
