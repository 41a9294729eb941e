"""Does scripts/store_hint.py time what it names: each writing kernel with only its output
stores rewritten, computing what the reference computes? (CPU, interpreter)"""

import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import store_hint as probe  # noqa: E402

from learning import ops  # noqa: E402
from learning.runtime import interpreting  # noqa: E402


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    return probe.variants(tmp_path_factory.mktemp("variants"))


def test_each_rewrite_adds_its_hint_to_every_output_store_and_nothing_else(modules):
    for (op, hint), module in modules.items():
        before = Path(probe.MODULES[op][0].__file__).read_text()
        after = Path(module.__file__).read_text()
        stores = sum(count for _, _, count in probe._STORES[op])
        assert after.count(probe.HINTS[hint]) - before.count(probe.HINTS[hint]) == stores
        assert len(after.splitlines()) == len(before.splitlines()), (op, hint)


@pytest.mark.skipif(not interpreting(), reason="runs the kernels in the interpreter")
@pytest.mark.parametrize("shape", [(3, 1000), (2, 4096)])
def test_every_variant_computes_the_reference(modules, shape):
    for (op, hint), module in modules.items():
        spec = ops.get(op)
        args = tuple(spec.make_inputs(shape, torch.float16, 0, "cpu").values())
        expected = spec.kernel_function("reference")(*args)
        torch.testing.assert_close(getattr(module, probe.MODULES[op][1])(*args), expected,
                                   msg=f"{op} {hint}")  # fmt: skip
