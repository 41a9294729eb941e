# Your copy of reference/kernels/__init__.py,
# made by scripts/make_exercises.py with the solution regions replaced by TODOs.
# This file is yours to edit; `python -m learning.check <exercise>` grades it.
# (Maintainers: edit the reference and rerun the script, never this copy.)
"""Reference Triton kernels, one module per operation, each in reading order."""
