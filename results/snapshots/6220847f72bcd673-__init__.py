"""The course's engine: op registry, checker, benchmark, reports and grading.

Importing this package chooses how Triton runs before Triton is imported: compiled on a CUDA
device when one is present, otherwise through Triton's CPU interpreter (see ``runtime``).
"""

from learning import runtime as _runtime

_runtime.select_backend()
