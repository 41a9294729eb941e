"""scripts/rmsnorm_wide_bwd_probe.py on a CPU: its rewrites touch the chunked backward only,
every variant but the diagnostic one computes the oracle gradients on chunked rows (in the
interpreter), the diagnostic one misses dweight alone, and bad arguments are one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
import warm_python

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import rmsnorm_wide_bwd_probe as probe  # noqa: E402  (imports learning first: the backend)

from learning import ops  # noqa: E402
from learning.runtime import default_device, interpreting  # noqa: E402
from reference.kernels import rmsnorm  # noqa: E402


@pytest.fixture(scope="module")
def found(tmp_path_factory):
    return probe.modules(tmp_path_factory.mktemp("wide-variants"))


def _chunked_path(text: str) -> str:
    kernel = text.split("def _rmsnorm_bwd_kernel")[1].split("def _rmsnorm_dweight_kernel")[0]
    return kernel.split("    else:\n")[1]


def test_the_reference_is_the_chunked_design_from_its_snapshot(found):
    """The variants rewrite the backward as it was timed (one persistent kernel with a chunked
    path), not the landed module, which no longer has that path."""
    assert probe.CHUNKED_DESIGN.is_file()
    snapshot = probe.CHUNKED_DESIGN.read_text()
    assert "CHUNKED: tl.constexpr" in snapshot.split("def _rmsnorm_bwd_kernel")[1]
    assert "_rmsnorm_bwd_tiles_kernel" not in snapshot
    assert "CHUNKED" not in Path(rmsnorm.__file__).read_text().split(
        "def _rmsnorm_bwd_kernel")[1].split("def _rmsnorm_bwd_dots_kernel")[0]
    assert found[None].backward_plan(4096, 32768, 2).chunked


def test_every_rewrite_changes_the_chunked_backward_only(found):
    reference = Path(found[None].__file__).read_text()
    for name in probe.REWRITES:
        source = Path(found[name].__file__).read_text()
        assert _chunked_path(source) != _chunked_path(reference), name
        def rest(text: str) -> str:  # from the kernels on (imports made absolute above them)
            return text.split("@triton.jit", 1)[1].replace(_chunked_path(text), "")

        assert rest(source) == rest(reference), name
    assert "eviction_policy=\"evict" not in _chunked_path(
        Path(found["no hints"].__file__).read_text())
    assert "partial_row + cols" not in _chunked_path(
        Path(found["no partial"].__file__).read_text())


def test_the_plans_replace_only_what_they_name(found):
    chunked = found[None]
    plan = chunked.backward_plan(4096, 32768, 2)
    assert plan.chunked  # the probe is about this path
    assert probe.plan_for(chunked, probe.VARIANTS["reference"], 4096, 32768, 2) == plan
    whole = probe.plan_for(chunked, probe.VARIANTS["whole row, 32 warps"], 4096, 32768, 2)
    assert (whole.chunked, whole.block_cols, whole.num_warps) == (False, 32768, plan.num_warps)
    two = probe.plan_for(chunked, probe.VARIANTS["rows 2, block 8192"], 4096, 32768, 2)
    assert (two.rows_per_program, two.block_cols, two.num_warps) == (2, 8192, plan.num_warps)


@pytest.mark.slow  # 20-40 s: each variant in the interpreter, on the narrowest chunked rows
@pytest.mark.parametrize(("shape", "dtype"), [((2, 12300), torch.float16),
                                               ((2, 8200), torch.float32)])  # fmt: skip
def test_every_variant_computes_the_oracle_gradients_but_the_diagnostic(found, shape, dtype):
    assert found[None].backward_plan(*shape, dtype.itemsize).chunked
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
        expected = runs[repr(probe.VARIANTS["reference"])]  # the first of them
        why = probe.timing.oracle_check(spec, outputs, inputs, dtype)
        if label in probe.DIAGNOSTIC:
            assert why and torch.equal(outputs[0], expected[0]), label  # dweight alone wrong
            assert not torch.allclose(outputs[2].float(), expected[2].float()), label
        else:
            assert why == "", label
            torch.testing.assert_close(outputs[0], expected[0], rtol=0, atol=2e-3)


def _run(*args) -> subprocess.CompletedProcess:
    return warm_python.run([sys.executable, str(ROOT / "scripts" / "rmsnorm_wide_bwd_probe.py"),
                            *map(str, args)], capture_output=True, text=True, cwd=ROOT,
                           timeout=120)  # fmt: skip


@pytest.mark.skipif(not interpreting(), reason="checks the CPU refusal")
def test_it_refuses_a_cpu_in_one_line_and_writes_nothing(tmp_path):
    output = tmp_path / "out.json"
    done = _run("--rounds", "1", "--output", output)
    assert done.returncode == 2 and not output.exists()
    assert len(done.stdout.strip().splitlines()) == 1 and "GPU" in done.stdout


@pytest.mark.parametrize(("args", "says"), [(["--shapes", "12x"], "--shapes"),
                                            (["--rounds", "0"], "--rounds"),
                                            (["--profile", "reference"], "--shape"),
                                            (["--profile", "nope", "--shape", "4", "8"],
                                             "--profile"),
                                            (["--profile", "reference", "--shape", "4", "8",
                                              "--shapes", "4x8"], "--shapes")])  # fmt: skip
def test_bad_arguments_are_one_line_and_exit_2(args, says, tmp_path):
    output = tmp_path / "out.json"
    done = _run(*args, "--output", output)
    assert done.returncode == 2 and not output.exists()
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0]
    assert lines[0].startswith("rmsnorm_wide_bwd_probe: error: ")
