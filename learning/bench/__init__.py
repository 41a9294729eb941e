"""The benchmark: ``kernel-bench`` on the command line, :func:`run` from Python.

::

    from learning.bench import BenchConfig, run
    report = run(BenchConfig(op="softmax", output=Path("results/local/softmax.json")))
    report.data["cases"][0]["variants"][0]["median_ms"]

The method (the oracle gate before timing and again after it, CUDA-graph replay, visits in a
seeded order, clock warm-up, cold-cache flush subtraction, a learner's kernels timed by replaying
their launches) is described phase by phase in :mod:`learning.bench.engine`.
"""

from importlib import import_module

# What the package offers, and where it lives: imported when first asked for, so that
# ``kernel-bench --help``, ``compare`` and a refused command line start without torch.
_WHERE = {
    "BenchConfig": "config", "BenchInputError": "config", "PHASES": "engine",
    "Report": "engine", "incomplete_path": "engine", "run": "engine", "format_table": "output",
}  # fmt: skip
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
