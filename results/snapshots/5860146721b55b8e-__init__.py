"""Reference implementations: the measurement helpers and one Triton module per operation."""

from learning import runtime as _runtime

_runtime.select_backend()
