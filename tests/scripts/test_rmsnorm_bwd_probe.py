"""scripts/rmsnorm_bwd_probe.py on a CPU: its rewrites apply to the landed backward, every
variant computes the training op's oracle gradients (in the interpreter), and it refuses a CPU
and bad arguments in one line, writing nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
import warm_python

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import rmsnorm_bwd_probe as probe  # noqa: E402  (imports learning first: it selects the backend)

from learning import ops  # noqa: E402
from learning.runtime import default_device, interpreting  # noqa: E402
from reference.kernels import rmsnorm  # noqa: E402


@pytest.fixture(scope="module")
def found(tmp_path_factory):
    return probe.modules(tmp_path_factory.mktemp("variants"))


def test_every_rewrite_changes_the_backward_only(found):
    reference = Path(rmsnorm.__file__).read_text()

    def forward_kernel(text: str) -> str:
        return text.split("def _rmsnorm_fwd_kernel")[1].split("def _rmsnorm_bwd_kernel")[0]

    for name in probe.REWRITES:
        source = Path(found[name].__file__).read_text()
        assert source != reference, name
        assert forward_kernel(source) == forward_kernel(reference), name
    assert "num_stages=2" in Path(found["prefetch"].__file__).read_text()
    assert Path(found["evict first"].__file__).read_text().count('"evict_first"') == (
        reference.count('"evict_first"') + 6)  # the whole-row and the split tiles kernel


def test_every_variant_is_listed_with_a_module_and_a_factor(found):
    assert set(probe.VARIANTS) >= {"reference", "reference again"}
    for name, factor in probe.VARIANTS.values():
        assert name in found and factor in (1, 2, 4)


@pytest.mark.parametrize(("shape", "dtype"), [((37, 781), torch.float32),
                                               ((64, 128), torch.float16),
                                               ((9, 4096), torch.float16)])  # fmt: skip
def test_every_variant_computes_the_oracle_gradients(found, shape, dtype):
    spec = ops.get(probe.OP)
    inputs = spec.inputs(shape, dtype, 0, default_device())
    calls = probe.case_calls(found, inputs)
    assert set(calls) == set(probe.VARIANTS) | {"wrapper"}
    runs = {}  # equal variants compute the same: "reference again" (the A/A pair) runs once
    for label, call in calls.items():
        settings = repr(probe.VARIANTS.get(label, label))
        if settings not in runs:
            runs[settings] = call()
        outputs = runs[settings]
        assert probe.timing.oracle_check(spec, outputs, inputs, dtype) == "", label
    expected = runs[repr("wrapper")]  # the landed backward, as the course calls it
    for label in calls:
        outputs = runs[repr(probe.VARIANTS.get(label, label))]
        assert torch.equal(outputs[0], expected[0]), label  # dx: the same arithmetic


def test_a_variant_that_raises_or_misses_the_oracle_is_reported_not_timed(found):
    """A compile error or a wrong gradient in one variant leaves the others to be timed."""
    spec = ops.get(probe.OP)
    inputs = spec.inputs((37, 781), torch.float32, 0, default_device())
    calls = probe.case_calls(found, inputs)
    good = calls["reference"]

    def wrong():
        dx, _, dweight = good()
        return dx + 1.0, dx + 1.0, dweight

    def broken():
        raise RuntimeError("out of resource: shared memory\nRequired: 262144")

    failed = probe.checked(spec, {"reference": good, "wrong": wrong, "broken": broken},
                           inputs, torch.float32)  # fmt: skip
    assert set(failed) == {"wrong", "broken"}
    assert failed["broken"].startswith("raised RuntimeError: out of resource")
    assert "\n" not in failed["broken"] and failed["wrong"]
    record = {"shape": "37x781", "dtype": "float32", "logical_bytes": 1, "failed": failed,
              "variants": probe.summarize({"reference": [0.1, 0.1]}, 1)}  # fmt: skip
    lines = probe.table_lines([record])
    assert any(line.split()[:3] == ["broken", "not", "timed:"] for line in lines)


def test_more_programs_an_sm_multiply_the_persistent_programs():
    plan = rmsnorm.backward_plan(4096, 1024, 2)
    device = torch.device(default_device())
    one = probe.n_programs(rmsnorm, plan, 4096, device, 1)
    assert probe.n_programs(rmsnorm, plan, 4096, device, 2) == min(4096, 2 * one)
    blocks = 3 * plan.rows_per_program  # three row blocks: never more programs than that
    assert probe.n_programs(rmsnorm, plan, blocks, device, 4) == 3


def test_the_table_sorts_by_median_and_pairs_against_the_reference():
    samples = {"reference": [0.1, 0.1, 0.1], "prefetch": [0.09, 0.091, 0.092]}
    record = {"shape": "16384x4096", "dtype": "float16", "logical_bytes": 4 * 16384 * 4096 * 2,
              "variants": probe.summarize(samples, 4 * 16384 * 4096 * 2)}  # fmt: skip
    lines = probe.table_lines([record])
    body = lines[4:]
    assert body[0].split()[0] == "prefetch" and body[1].split()[0] == "reference"
    assert "0/3" in body[0] and body[1].split()[-1] == "-"


def _run(*args) -> subprocess.CompletedProcess:
    return warm_python.run([sys.executable, str(ROOT / "scripts" / "rmsnorm_bwd_probe.py"),
                            *map(str, args)], capture_output=True, text=True, cwd=ROOT,
                           timeout=120)  # fmt: skip


@pytest.mark.skipif(not interpreting(), reason="checks the CPU refusal")
def test_it_refuses_a_cpu_in_one_line_and_writes_nothing(tmp_path):
    output = tmp_path / "out.json"
    done = _run("--rounds", "1", "--output", output)
    assert done.returncode == 2 and not output.exists()
    assert len(done.stdout.strip().splitlines()) == 1 and "GPU" in done.stdout


@pytest.mark.parametrize(("args", "says"), [(["--shapes", "12x"], "--shapes"),
                                            (["--dtypes", "int8"], "--dtypes"),
                                            (["--rounds", "0"], "--rounds")])  # fmt: skip
def test_bad_arguments_are_one_line_and_exit_2(args, says, tmp_path):
    output = tmp_path / "out.json"
    done = _run(*args, "--output", output)
    assert done.returncode == 2 and not output.exists()
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0]
    assert lines[0].startswith("rmsnorm_bwd_probe: error: ")
