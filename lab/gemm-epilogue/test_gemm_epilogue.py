"""Does gemm_epilogue.py still build its rewritten GEMM module? (CPU)

Its "no store" variant is ``reference/kernels/matmul.py`` rewritten and imported as a module of
its own (``scripts/_variants.py``). When ``matmul.py`` began to import its Hopper kernel with
``from . import pingpong`` (``cooperative`` since), the rewrite turned that line into a syntax
error and every run of the script, ``--profile`` under Nsight Compute included, stopped there.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import gemm_epilogue  # noqa: E402  (imports learning first: it selects the backend)


def test_every_variant_is_built_and_the_rewrite_imports_absolutely(tmp_path: Path):
    variants = gemm_epilogue.variant_functions(tmp_path)
    assert set(variants) == set(gemm_epilogue.VARIANTS)
    module, fn = variants["no store"]
    source = Path(module.__file__).read_text()
    sibling = re.search(r"\nfrom reference\.kernels import \w+\n", source)
    assert sibling, "the Hopper kernel's import was not made absolute"
    assert "\nfrom ." not in source, "a relative import left in a module outside its package"
    assert callable(fn) and fn is module.matmul
    # the rewrite itself took: the store is behind the run-time branch
    assert "if M >= 0:  # always, at run time" in source
