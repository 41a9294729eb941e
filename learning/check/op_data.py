"""What the kernel checker reads about an op besides its spec: the module ``check`` of the op's
definition package (``learning/ops/softmax/check.py``), where the op has one.

The spec (``learning/ops/<op>/__init__.py``) is what every tool reads and what a recorded
report binds; what only the checker asks (the inputs whose rows may lie apart, the wrapper
paths it forces, the typical mistakes it names) lives beside it in a module that no run
imports, so that writing a hint stales no evidence (``learning.report.binding``). The
checker (``learning.check.kernels``, ``learning.check.kernel_hints``) reads it only here and
names no op itself. An op may read another's (``max`` reads ``sum``'s, a training step its
forward's), and the words a path is written with are in ``learning.check.wrapper_paths``.

A ``check`` module may define any of these (the checker asks for nothing else):

* ``STRIDED``: the inputs whose rows may lie further apart than their width (the last
  dimension contiguous, any row stride); none where the op takes contiguous tensors only;
* ``MIN_WIDTH``: the narrowest row the checker draws (1 when not given), for an op whose
  gradient is ill-conditioned on narrower rows;
* ``SPECIALS``: the op's classic traps, each checked on one shape, each a dict of
  :class:`learning.check.kernels._Special`'s fields: ``name`` (the check's), ``note`` (added
  to the input line), ``dtypes``, ``transform`` (the plain inputs -> the trap's: x scaled by
  100, a larger eps) and, optionally, ``shape`` (the irregular CPU shape when not given) and
  ``bitwise`` (whether the first call is also replayed for a bit-for-bit match);
* ``LARGE``: inputs of large magnitude, a dict of :class:`learning.check.kernels._Large`'s
  fields: ``note`` (added to the input line) and ``transform`` (the plain inputs -> large ones,
  softmax's x shifted by +100); every case but the ``SPECIALS`` gets one call on them, at its
  own shape and path, so that a kernel that overflows fails on every path where it does;
* ``PATHS``: paths through the op module's wrappers that the CPU shapes miss, each a dict of
  :class:`learning.check.kernels._Path`'s fields: the wrapper calls that take it (``steps``,
  with the ``plans`` they ask for), or the ``shape`` and layout (``transposed``) that take it
  alone; ``extra`` names outputs beyond the op's (the forward's saved log-sum-exp) with the
  float64 function that computes each from the inputs and the dtype it must have;
* ``mistakes(inputs, dtype)``: the typical mistakes, as :mod:`learning.check.kernel_hints`
  reads them: ``(output label, what the mistaken kernel computes in float64, hint)``, from
  the inputs in float64 and the dtype the kernel was called with;
* ``EAGER_SPEEDUP_LIMIT``: the speed-up over the eager baseline above which the grader asks
  whether a learner's timing is real (:mod:`learning.grade.plausibility`; default 10x).
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
