"""Does rmsnorm_evict.py time what it names: the RMSNorm forward with its eviction
rule forced each way, computing what the reference computes? (CPU, interpreter)"""

import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import rmsnorm_evict as probe  # noqa: E402

from learning import ops  # noqa: E402
from learning.runtime import interpreting  # noqa: E402
from reference.kernels import rmsnorm  # noqa: E402
from reference.kernels.row_plan import choose_row_plan  # noqa: E402


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    return probe.variants(tmp_path_factory.mktemp("variants"))


def test_the_rule_is_forced_each_way_and_only_the_rule_changes(modules):
    assert set(modules) == {"hint always", "hint never"}
    for n_cols in (128, 781, 1024, 4096, 32768):
        assert modules["hint always"]._evict_rows(n_cols) is True
        assert modules["hint never"]._evict_rows(n_cols) is False
    before = Path(rmsnorm.__file__).read_text()
    for module in modules.values():
        after = Path(module.__file__).read_text()
        assert len(after.splitlines()) == len(before.splitlines()) and after != before


def test_every_shape_keeps_whole_rows_so_the_rule_applies():
    for n_rows, n_cols in probe.SHAPES:
        for element_size in (2, 4):
            plan = rmsnorm.forward_plan(n_rows, n_cols, element_size)
            assert not plan.chunked, (n_rows, n_cols, element_size)
    assert choose_row_plan(1, 32768, 2, passes=2, streams=2).chunked  # why 4096 x 32768 is out


@pytest.mark.skipif(not interpreting(), reason="runs the kernels in the interpreter")
@pytest.mark.parametrize("shape", [(37, 128), (3, 781), (2, 4096)])
def test_every_variant_normalizes_as_the_reference(modules, shape):
    spec = ops.get("rmsnorm")
    args = tuple(spec.make_inputs(shape, torch.float16, 0, "cpu").values())
    expected = spec.kernel_function("reference")(*args)
    for label, module in modules.items():
        torch.testing.assert_close(module.rmsnorm(*args), expected, msg=label)
