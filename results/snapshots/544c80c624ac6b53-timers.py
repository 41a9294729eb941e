"""How one sample is taken. Three backends share one shape: ``prepare`` a callable once, then
per visit an untimed run, then ``sample()`` calls that are read after ``finish_round()``.

* :class:`GraphTimer` (default on CUDA): ``count`` invocations captured in one CUDA graph; a
  sample is one replay timed with CUDA events, divided by ``count``. Python dispatch and
  output allocation happen once, at capture, so the figure is the device's time.
  Cold cache: each captured invocation is ``[flush, start event, call, end event]``; the events
  are recorded inside the graph (``external`` events), so a sample is the device time between
  the end of a flush and the end of the call, whatever the host does. Where in-graph events
  are not available, the fallback captures ``[flush, call]``, samples a flush-only graph in
  the same rounds and subtracts its median (see ``engine``): also device-bound, but noisier,
  since a ~3 us call is then the difference of two ~300 us replays.
* :class:`EventsTimer` (``--timing events``): ordinary Python calls with events around each;
  a kernel shorter than its launch overhead reads as the overhead. Dispatch-sensitive.
* :class:`CpuTimer` (no GPU): ``time.perf_counter`` around synchronous interpreter calls.
  Tests the engine; the figures say nothing about a GPU.

``prepare(invoke, before)``: ``before`` (optional) runs ahead of every Python call, outside
the timed window; the engine uses it to mark the inputs as modified (a new version number), so
that a cache keyed on the inputs' version cannot answer a timed call. A graph replay runs no
Python, so a cache there is left out of the graph, which the re-check catches.

Every prepared callable also has ``verify(poison)``: one more call made the way the timed ones
are, on poisoned memory, that returns the outputs, so the engine can check what the timed work
really produces (``learning.bench.gate``). A graph: its outputs from capture filled by
``poison``, one replay, a synchronize. A Python call: a first call whose outputs ``poison``
fills before they are freed, then the call whose outputs are returned.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

Invoke = Callable[[], object]  # one call; returns its outputs
Before = Callable[[], None] | None
Poison = Callable[[torch.Tensor], None]
Reader = Callable[[], float]  # ms per call, valid after finish_round()


def out_of_memory(error: BaseException) -> bool:
    oom = getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)
    return isinstance(error, oom) or "out of memory" in str(error).lower()


def busy_wait_us(microseconds: float) -> None:
    """Spin on the host (a debug delay); ``time.sleep`` is far too coarse for microseconds."""
    end = time.perf_counter_ns() + int(microseconds * 1000)
    while time.perf_counter_ns() < end:
        pass


class _Timed:
    def __init__(
        self,
        untimed: Callable[[], None],
        sample: Callable[[], Reader],
        verify: Callable[[Poison], object] | None = None,
    ):
        self.replay_untimed = untimed
        self.sample = sample
        self.verify = verify


def _outputs(value: object) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, tuple | list):
        return [t for t in value if isinstance(t, torch.Tensor)]
    return []


def _with_before(invoke: Invoke, before: Before) -> Invoke:
    if before is None:
        return invoke

    def call() -> object:
        before()
        return invoke()

    return call


def _python_verify(call: Invoke) -> Callable[[Poison], object]:
    def verify(poison: Poison) -> object:
        for tensor in _outputs(call()):
            poison(tensor)
        return call()

    return verify


def _graph_verify(graph: torch.cuda.CUDAGraph, kept: list) -> Callable[[Poison], object]:
    """Poison the outputs the captured calls write (the last call's, kept alive since
    capture), replay the graph once, wait for it, return them."""

    def verify(poison: Poison) -> object:
        outputs = kept[0]
        for tensor in _outputs(outputs):
            poison(tensor)
        graph.replay()
        torch.cuda.synchronize()
        return outputs

    return verify


class GraphTimer:
    name = "graph"

    def __init__(self, count: int, warmup_calls: int, flush: Callable[[], None] | None):
        self.count = count
        self.warmup_calls = warmup_calls
        self.flush = flush  # None: warm cache
        # Cold cache: in-graph events when the first capture shows they work, else subtraction.
        self.cold_method: str | None = None if flush is not None else "warm"
        self.subtracts_flush = False
        self.fallback_reason: str | None = None
        self.pool = None
        self.stream = None

    def new_case(self) -> None:
        """The variants of one case share a graph memory pool (outputs are never read), and
        warm up and capture on one side stream of their own, never the default stream."""
        self.pool = torch.cuda.graph_pool_handle()
        self.stream = torch.cuda.Stream()

    def _capture(self, body: Callable[[], object]) -> torch.cuda.CUDAGraph:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool, stream=self.stream):
            for _ in range(self.count):
                body()
        torch.cuda.synchronize()
        return graph

    def _timed(self, graph: torch.cuda.CUDAGraph, kept: list | None = None) -> _Timed:
        count = self.count

        def sample() -> Reader:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            return lambda: start.elapsed_time(end) / count

        return _Timed(graph.replay, sample, _graph_verify(graph, kept) if kept else None)

    def prepare(self, invoke: Invoke, before: Before = None) -> _Timed:
        # PyTorch's rule for capture: warm up on a side stream first (autograd, cuBLAS
        # workspaces and lazy initialisation must not happen for the first time in capture).
        side = self.stream
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(self.warmup_calls):
                if before is not None:
                    before()
                invoke()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        flush = self.flush
        if flush is not None and self.cold_method != "flush-subtraction":
            timed = self._prepare_cold_events(invoke)
            if timed is not None:
                return timed

        kept: list = [None]  # the last captured call's outputs: memory the replays write

        def body() -> None:
            if flush is not None:
                flush()
            kept[0] = invoke()

        return self._timed(self._capture(body), kept)

    def _prepare_cold_events(self, invoke: Invoke) -> _Timed | None:
        """``count`` x [flush, event, call, event] in one graph; ``None`` if unsupported."""
        count, flush = self.count, self.flush
        kept: list = [None]
        try:
            starts = [torch.cuda.Event(enable_timing=True, external=True) for _ in range(count)]
            ends = [torch.cuda.Event(enable_timing=True, external=True) for _ in range(count)]
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=self.pool, stream=self.stream):
                for start, end in zip(starts, ends, strict=True):
                    flush()
                    start.record()
                    kept[0] = invoke()
                    end.record()
            torch.cuda.synchronize()
            graph.replay()
            torch.cuda.synchronize()
            starts[0].elapsed_time(ends[0])
        except (RuntimeError, TypeError) as error:
            if self.cold_method == "in-graph-events":
                raise
            self.cold_method, self.subtracts_flush = "flush-subtraction", True
            self.fallback_reason = str(error).splitlines()[0] if str(error) else repr(error)
            return None
        self.cold_method, self.subtracts_flush = "in-graph-events", False

        def sample() -> Reader:
            graph.replay()
            return lambda: sum(s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)) / count

        return _Timed(graph.replay, sample, _graph_verify(graph, kept))

    def prepare_flush(self) -> _Timed | None:
        return None if self.flush is None else self._timed(self._capture(self.flush))

    def finish_round(self) -> None:
        torch.cuda.synchronize()


class EventsTimer:
    name = "events"
    subtracts_flush = False

    def __init__(self, iterations: int, warmup_calls: int, flush: Callable[[], None] | None):
        self.iterations = iterations
        self.warmup_calls = warmup_calls
        self.flush = flush

    def new_case(self) -> None:
        pass

    def prepare(self, invoke: Invoke, before: Before = None) -> _Timed:
        call = _with_before(invoke, before)
        for _ in range(self.warmup_calls):
            call()
        torch.cuda.synchronize()
        iterations, flush = self.iterations, self.flush

        def sample() -> Reader:
            pairs = []
            for _ in range(iterations):
                if flush is not None:
                    flush()
                if before is not None:
                    before()
                start, end = (
                    torch.cuda.Event(enable_timing=True),
                    torch.cuda.Event(enable_timing=True),
                )
                start.record()
                invoke()
                end.record()
                pairs.append((start, end))
            return lambda: sum(s.elapsed_time(e) for s, e in pairs) / len(pairs)

        return _Timed(call, sample, _python_verify(call))

    def prepare_flush(self) -> None:
        return None

    def finish_round(self) -> None:
        torch.cuda.synchronize()


class CpuTimer:
    name = "cpu-interpreter"
    subtracts_flush = False
    SCRATCH_BYTES = 32 << 20  # larger than a laptop CPU's last-level cache

    def __init__(self, iterations: int, warmup_calls: int, cold: bool):
        self.iterations = iterations
        self.warmup_calls = warmup_calls
        self.scratch = torch.empty(self.SCRATCH_BYTES, dtype=torch.uint8) if cold else None

    def new_case(self) -> None:
        pass

    def prepare(self, invoke: Invoke, before: Before = None) -> _Timed:
        call = _with_before(invoke, before)
        for _ in range(self.warmup_calls):
            call()
        iterations, scratch = self.iterations, self.scratch

        def sample() -> Reader:
            total = 0.0
            for _ in range(iterations):
                if scratch is not None:
                    scratch.zero_()
                if before is not None:
                    before()
                start = time.perf_counter()
                invoke()
                total += time.perf_counter() - start
            value = total * 1e3 / iterations
            return lambda: value

        return _Timed(call, sample, _python_verify(call))

    def prepare_flush(self) -> None:
        return None

    def finish_round(self) -> None:
        pass


def make_timer(
    device: str,
    timing: str,
    cache: str,
    iterations: int,
    warmup_calls: int,
    l2_bytes,
    flush: str = "read",
):
    """The backend for this run; cold cache on CUDA flushes with :func:`make_flush`."""
    if device == "cpu":
        return CpuTimer(iterations, warmup_calls, cold=cache == "cold")
    evict = make_flush(flush_bytes(l2_bytes), flush) if cache == "cold" else None
    if timing == "events":
        return EventsTimer(iterations, warmup_calls, evict)
    return GraphTimer(iterations, warmup_calls, evict)


def make_flush(size: int, kind: str = "read") -> Callable[[], None]:
    """A callable that evicts the L2 by streaming ``size`` bytes (at least twice the L2).

    ``read`` (the default) sums a buffer into a preallocated scalar: the L2 ends full of the
    buffer's *clean* lines, so the timed call pays only for its own misses. ``write`` zeroes
    the buffer: the L2 ends full of *dirty* lines, and the timed call also pays to write them
    back to DRAM as its own data evicts them -- a cost of the flush, not of the kernel, which
    falls hardest on a kernel that reads much and writes little (a row sum). Both stream the
    same bytes. Measured on the H200 (``results/h200/all-cold-flush-{read,write}.json``): a
    16384 x 4096 fp16 row sum read 3856 GB/s cold with the read flush, 3169 with the write.
    """
    if kind not in ("read", "write"):
        raise ValueError(f"flush must be 'read' or 'write', got {kind!r}")
    buffer = torch.zeros(size // 4, dtype=torch.float32, device="cuda")
    if kind == "write":
        return buffer.zero_
    sink = torch.zeros((), dtype=torch.float32, device="cuda")

    def read() -> None:
        torch.sum(buffer, dim=0, out=sink)

    return read


def flush_bytes(l2_bytes: int | None) -> int:
    """At least twice the L2 (60 MiB on the H200 -> 120 MiB); 256 MiB when the L2 is unknown."""
    return 2 * l2_bytes if l2_bytes else 256 << 20
