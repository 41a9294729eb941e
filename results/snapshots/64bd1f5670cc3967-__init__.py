"""The benchmark: ``kernel-bench`` on the command line, :func:`run` from Python.

::

    from learning.bench import BenchConfig, run
    report = run(BenchConfig(op="softmax", output=Path("results/local/softmax.json")))
    report.data["cases"][0]["variants"][0]["median_ms"]

The method (the oracle gate before timing and again after it, CUDA-graph replay, visits in a
seeded order, clock warm-up, cold-cache flush subtraction, a learner's kernels timed by replaying
their launches) is described phase by phase in :mod:`learning.bench.engine`.
"""

from learning.bench.config import BenchConfig, BenchInputError
from learning.bench.engine import PHASES, Report, incomplete_path, run
from learning.bench.output import format_table

__all__ = [
    "PHASES",
    "BenchConfig",
    "BenchInputError",
    "Report",
    "format_table",
    "incomplete_path",
    "run",
]
