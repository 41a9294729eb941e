"""Evidence that your own Triton kernels computed the answer: record a call, replay it elsewhere.

The checker cannot trust the Python that calls your kernels: it runs in the same process as
your code, and your code could patch anything there, fall back to PyTorch behind a kernel
that does nothing, keep a result from an earlier call, or notice it is being checked. So the
checker does not take the answer from that process at its word. It asks for *evidence*:

1. **Record** (in the untrusted process). While your function runs, :class:`TraceRecorder`
   writes down every Triton launch: which kernel, its grid, its scalar and ``tl.constexpr``
   arguments, and, for each tensor argument, which buffer it points into (an input, a
   ``torch.empty``-style allocation, a constant fill) and where; and, between the launches,
   each copy or cast the call made of a tensor (``x.contiguous()``, ``y32.to(x.dtype)``: the
   *steps* of :mod:`learning.check.replay.plumbing`). That list is the *trace*: plain JSON,
   no Python objects.
2. **Extract** (trusted). :func:`extract_kernels` reads your source files as text
   (``ast.parse``: they are never imported or run) and keeps only the ``@triton.jit``
   functions, the constants they read, and the imports between your files. Each kernel body is
   checked against an allow-list of Triton-language constructs (assignments, loops over
   ``range``/``tl.range``/``tl.static_range``, ``if``, calls of ``tl.*`` ...); anything else
   (an import, ``getattr``, a ``__dunder__`` attribute, a nested function ...) is refused with
   a :class:`KernelSourceError` that names the file and line.
3. **Replay** (trusted, in a fresh process). :func:`replay` loads those extracted kernels,
   builds every buffer afresh, fills the inputs with NEW values (same shapes, strides and
   dtypes) that your code never saw, and makes the recorded launches again, in order, with the
   steps between them made on its own tensors (a step from a tensor PyTorch computed is not
   made). The checker then compares what the replayed kernels stored with the float64 oracle.

What is trusted: the extracted kernel text, the inputs the checker makes, and this module.
What is evidence: a trace whose replay, on hidden inputs, stores the right answer. Only your
kernels run in the replay, so a PyTorch fallback stores nothing (the output still holds the
checker's marked NaN), a cached result or an answer passed in a scalar argument is the answer
to the old inputs (wrong on the new ones), a kernel borrowed from ``reference/`` is refused by
name, and work done in another process never happens. The recording process may lie about
the trace; a lie can only make the replay fail.

kernel-bench uses the same pieces to time a kernel without importing your Python:
:class:`ReplayProgram` replays a trace on any inputs of the recorded layout.
"""

from learning.check.replay.errors import KernelSourceError, ReplayError
from learning.check.replay.extract import KernelBundle, extract_kernels
from learning.check.replay.play import ReplayProgram, ReplayResult, replay
from learning.check.replay.record import TraceRecorder

__all__ = [
    "KernelBundle",
    "KernelSourceError",
    "ReplayError",
    "ReplayProgram",
    "ReplayResult",
    "TraceRecorder",
    "extract_kernels",
    "replay",
]
