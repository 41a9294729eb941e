# Your copy of reference/__init__.py,
# made by scripts/make_exercises.py with the solution regions replaced by TODOs.
# This file is yours to edit; `python -m learning.check <exercise>` grades it.
# (Maintainers: edit the reference and rerun the script, never this copy.)
"""Reference implementations: the measurement helpers and one Triton module per operation."""

from learning import runtime as _runtime

_runtime.select_backend()
