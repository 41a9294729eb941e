"""What the kernel checker reads about ``add``, besides its spec (no run imports this module;
``learning.check.op_data`` says what the checker asks of it).

``add`` takes contiguous tensors only, so none of its inputs lie apart (no ``STRIDED``), and
its one kernel runs on every input (no ``PATHS``). **The typical mistakes**, each as the
mistaken kernel computes it, in float64: ``x`` loaded twice, and ``y`` never added.
"""

from __future__ import annotations


def mistakes(inputs: dict, dtype):
    x = inputs["x"]
    yield "output", x + x, "the output is x + x: the second load reads x_ptr, not y_ptr"
    yield "output", x, "the output is x alone: y was never added"
