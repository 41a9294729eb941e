"""The course's engine: op registry, checker, benchmark, reports and grading.

Importing this package makes sure Triton's backend is chosen before Triton is imported:
compiled on a CUDA device when one is present, otherwise through Triton's CPU interpreter. The
choice, which imports torch, waits until Triton is imported or the backend is asked for, so a
command that only reads reports starts at once (see ``runtime``).
"""

from learning import runtime as _runtime

_runtime.select_backend_before_triton()
