"""What the kernel checker reads about an op besides its spec: the module ``check`` of the op's
definition package (``learning/ops/attention/check.py``), where the op has one.

The spec (``learning/ops/<op>/__init__.py``) is what every tool reads and what a recorded
report binds; what only the checker asks (the inputs whose rows may lie apart, the wrapper
paths it forces, the typical mistakes it names) can live beside it in a module that no run
imports, so that writing a hint stales no evidence (``learning.report.binding``). The ops
written before these modules keep theirs in the checker's own tables
(``learning.check.kernels``, ``learning.check.kernel_hints``); a name is looked up there
first.

A ``check`` module may define:

* ``STRIDED``: the inputs whose rows may lie further apart than their width;
* ``PATHS``: paths through the op module's wrappers, each a dict of
  :class:`learning.check.kernels._Path`'s fields; ``extra`` names outputs beyond the op's (the
  forward's saved log-sum-exp) with the float64 function that computes each from the inputs
  and the dtype it must have;
* ``mistakes(inputs, dtype)``: the typical mistakes, as :mod:`learning.check.kernel_hints`
  reads them: ``(output label, what the mistaken kernel computes in float64, hint)``.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from learning import ops


def module(op: str) -> ModuleType | None:
    """``learning.ops.<op>.check``, or None where the op has none (or is not an op)."""
    if op not in ops.NAMES:
        return None
    name = f"{ops.OPS[op].definition}.check"
    if importlib.util.find_spec(name) is None:
        return None
    return importlib.import_module(name)


def value(op: str, name: str, default=None):
    """The ``check`` module's ``name``, or ``default``."""
    found = module(op)
    return getattr(found, name, default) if found is not None else default
