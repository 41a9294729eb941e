"""Do streaming_variants.py's rewrites apply to the reference and still compute the op?

Runs each rewritten kernel in Triton's interpreter on small inputs (the GPU timing itself
is the script's job)."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import streaming_variants as probe  # noqa: E402

from learning.runtime import interpreting  # noqa: E402

pytestmark = pytest.mark.skipif(not interpreting(), reason="runs the kernels in the interpreter")


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    directory = tmp_path_factory.mktemp("variants")
    return {"reductions": probe.reduction_variants(directory), "add": probe.add_variants(directory)}


def test_every_row_reduction_variant_sums_and_maxes_as_the_reference(modules):
    x = torch.randn(37, 300, generator=torch.Generator().manual_seed(0))
    assert set(modules["reductions"]) == {"evict_first", "int32", "evict_first+int32"}
    for label, module in modules["reductions"].items():
        torch.testing.assert_close(module.row_sum(x), x.sum(dim=-1), msg=label)
        torch.testing.assert_close(module.row_max(x), x.amax(dim=-1), msg=label)


def test_every_add_variant_adds_and_the_rewrites_changed_the_source(modules, tmp_path):
    x, y = torch.randn(3, 1000), torch.randn(3, 1000)
    for label, module in modules["add"].items():
        torch.testing.assert_close(module.add(x, y), x + y, msg=label)
    source = Path(modules["add"]["evict_first"].__file__).read_text()
    assert source.count('eviction_policy="evict_first"') == 2
    assert "pid.to(tl.int64)" not in Path(modules["add"]["int32"].__file__).read_text()
    both = Path(modules["reductions"]["evict_first+int32"].__file__).read_text()
    assert both.count(', eviction_policy="evict_first")') == 2 and ".to(tl.int64)" not in both


def test_a_reference_that_moved_on_stops_the_probe(tmp_path):
    with pytest.raises(SystemExit, match="update the probe's rewrites"):
        probe.rewritten(probe.reductions, [("no such line", "", 1)], tmp_path, "moved_on")
