"""Does scripts/row_mask_probe.py time the kernels it names: each variant the reference with
only its row masking rewritten, computing what the reference computes? (CPU, interpreter)"""

import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import row_mask_probe as probe  # noqa: E402

from learning import ops  # noqa: E402
from learning.runtime import default_device  # noqa: E402
from reference.kernels import rmsnorm, softmax  # noqa: E402

# (37, 781): two rows a program in 16-bit, the last program half past the end; (38, 781):
# every program's rows exist; (5, 3000): one
SHAPES = ((37, 781), (38, 781), (5, 3000))


@pytest.fixture(scope="module")
def variants(tmp_path_factory):
    directory = tmp_path_factory.mktemp("variants")
    return {
        (module, label): probe.variant(module, label, directory)
        for module, label in probe.REWRITES
    }


def test_every_rewrite_changes_the_source(variants):
    for (module, label), rewritten in variants.items():
        before = Path(probe.MODULES[module].__file__).read_text()
        after = Path(rewritten.__file__).read_text()
        assert before != after, (module, label)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("shape", SHAPES)
def test_rmsnorm_versions_compute_the_reference(variants, shape, dtype):
    spec = ops.get("rmsnorm")
    inputs = spec.make_inputs(shape, dtype, 0, default_device())
    x, residual, weight, eps = inputs.values()
    expected = rmsnorm.rmsnorm_fwd(x, residual, weight, eps)[0]
    clamped = variants[("rmsnorm", "rows clamped")]
    for module, options in ((rmsnorm, {}), (clamped, {}), (rmsnorm, {"MASK_ROWS": False}),
                            (rmsnorm, {"MASK_ROWS": True})):  # fmt: skip
        y = torch.full_like(x, float("nan"))
        launch, plan = probe.rmsnorm_launch(module, x, residual, weight, y, eps, **options)
        if options.get("MASK_ROWS") is False and shape[0] % plan.rows_per_program:
            continue  # past the end: the probe's cases leave it out, as here
        assert torch.equal(launch(), expected), (module.__name__, options)


def test_the_chunked_path_without_its_row_mask():
    """The switch reaches the chunked path only (one row a program): force a chunked plan."""
    from reference.kernels.row_plan import RowPlan

    spec = ops.get("rmsnorm")
    inputs = spec.make_inputs((5, 3000), torch.float32, 0, default_device())
    x, residual, weight, eps = inputs.values()
    expected = rmsnorm.rmsnorm_fwd(x, residual, weight, eps)[0]
    plan = RowPlan(block_cols=1024, rows_per_program=1, num_warps=4, chunked=True)
    for mask_rows in (True, False):
        y = torch.full_like(x, float("nan"))
        rmsnorm._rmsnorm_fwd_kernel[plan.grid(5)](
            x, residual, weight, y, y, 5, x.stride(0), residual.stride(0), eps,
            N=3000, BLOCK=1024, ROWS=1, CHUNKED=True, STORE_RSTD=False, NUM_STAGES=1,
            EVICT_ROWS=False, MASK_ROWS=mask_rows, num_warps=4,
        )  # fmt: skip
        torch.testing.assert_close(y, expected, rtol=1e-6, atol=1e-6)


def test_softmax_variant_computes_the_reference(variants):
    x = ops.get("softmax").make_inputs((5, 3000), torch.float16, 0, default_device())["x"]
    y = torch.full_like(x, float("nan"))
    launch, plan = probe.softmax_launch(variants[("softmax", "no row mask")], x, y)
    assert plan.rows_per_program == 1 and not plan.chunked
    assert torch.equal(launch(), softmax.softmax_fwd(x))


def test_a_reference_that_moved_stops_the_probe(tmp_path, monkeypatch):
    """A rewrite that no longer matches must stop the script, not time an unchanged kernel."""
    monkeypatch.setitem(probe.REWRITES, ("rmsnorm", "gone"), (("no such line", "x", 1),))
    with pytest.raises(SystemExit, match="update the probe's rewrites"):
        probe.variant("rmsnorm", "gone", tmp_path)
