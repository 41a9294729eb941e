"""A reference kernel module with a few lines of its source rewritten, for a probe to time.

A probe that asks "what does this line cost?" times the reference against the same module with
that line changed. ``rewritten(module, rewrites, directory)`` copies the module's source, applies
each ``(old, new, count)`` rewrite (``old`` must occur exactly ``count`` times, so a reference
that has moved on stops the probe instead of letting it time an unchanged kernel), makes the
module's relative imports absolute, writes it to ``directory`` (Triton reads a kernel's source
from its file) and imports it under a name of its own, so that its kernels compile apart from
the reference's.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def rewritten(module: ModuleType, rewrites, directory: Path, name: str) -> ModuleType:
    source = Path(module.__file__).read_text()
    for old, new, count in rewrites:
        if source.count(old) != count:
            raise SystemExit(
                f"{Path(module.__file__).name} has {source.count(old)} of {old!r}, expected "
                f"{count}; update the probe's rewrites to the reference"
            )
        source = source.replace(old, new)
    package = module.__name__.rpartition(".")[0]
    # a module now, not in a package: "from . import x" and "from .x import y" made absolute
    source = source.replace("\nfrom . import ", f"\nfrom {package} import ")
    source = source.replace("\nfrom .", f"\nfrom {package}.")
    return module_from_source(source, directory, name)


def module_from_source(source: str, directory: Path, name: str) -> ModuleType:
    """``source`` written to ``directory`` (Triton reads a kernel's source from its file) and
    imported as the module ``name``."""
    path = directory / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    variant = importlib.util.module_from_spec(spec)
    sys.modules[name] = variant
    spec.loader.exec_module(variant)
    return variant


# reference/kernels/reductions.py as it was before the change scripts/row_sum_code.py led to
# (accumulators started from zeros or -inf, no eviction hint): the probes that measured that
# version rewrite the current module back to it first, so that they still time what they did.
_LOOP_AFTER = "    for col_start in tl.range(BLOCK, N, BLOCK, num_stages=NUM_STAGES):\n"
_LOOP_BEFORE = "    for col_start in tl.range(0, N, BLOCK, num_stages=NUM_STAGES):\n"
_FIRST_STEP = (
    "    cols = tl.arange(0, BLOCK)\n"
    "    acc = tl.load(row_start + cols[None, :], mask=(cols < N)[None, :], other={other},\n"
    '                  eviction_policy="evict_first").to(tl.float32)  # fmt: skip\n'
)
_LOAD_AFTER = (
    "        x = tl.load(row_start + cols[None, :], mask=(cols < N)[None, :], other={other},\n"
    '                    eviction_policy="evict_first")  # fmt: skip\n'
)
_LOAD_BEFORE = ("        x = tl.load(row_start + cols[None, :], mask=(cols < N)[None, :], "
                "other={other})\n")  # fmt: skip
_NEGATIVE_INFINITY = 'float("-inf")'
REDUCTIONS_BEFORE = [
    ("    # the first step starts the partials (zeros would cost an add per value); each value is\n"
     "    # read once, so L2 may drop it first\n" + _FIRST_STEP.format(other="0.0") + _LOOP_AFTER,
     "    acc = tl.zeros((ROWS, BLOCK), dtype=tl.float32)\n" + _LOOP_BEFORE, 1),
    (_FIRST_STEP.format(other=_NEGATIVE_INFINITY) + _LOOP_AFTER,
     '    acc = tl.full((ROWS, BLOCK), float("-inf"), dtype=tl.float32)\n' + _LOOP_BEFORE, 1),
    (_LOAD_AFTER.format(other="0.0"), _LOAD_BEFORE.format(other="0.0"), 1),
    (_LOAD_AFTER.format(other=_NEGATIVE_INFINITY), _LOAD_BEFORE.format(other=_NEGATIVE_INFINITY),
     1),
]  # fmt: skip
