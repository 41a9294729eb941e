"""Where host time goes: eager, reference, custom-op and torch.compile calls (GPU only, ~1-2 min).

    python scripts/compile_overhead.py --output results/h200/compile-overhead.json

At 1024 x 1024 fp16 (softmax, residual RMSNorm) and 1024^3 fp16 (GEMM) a kernel takes a few
microseconds on an H200; what the host does around it can take longer. Each variant below is
oracle-checked, then measured three ways:

* ``host us/call``: the variant called many times in a row with no graph, then one sync; the
  host clock divided by the count (``host_us_per_call``). When the host is slower than the GPU
  this is the host's cost per call; when the GPU is slower the queue fills and it shows the
  device time instead (the ``bound`` column says which, by comparing with the next figure).
  An op's variants take these samples in shuffled turns, ``--rounds`` of them, and each row
  is the median: the H200 machine's host runs up to 2x slower from minute to minute, and
  timed one after another (as this script did until a run read the unchanged RMSNorm and
  GEMM references 2.0x and 1.6x slower than its first day's) the rows met different hosts.
* ``graph us``: the same call under CUDA-graph replay, where no Python runs: the device time.
* ``1st call ms``: the wall time of the very first call, with a sync. For the compiled variants
  this is the compile (Dynamo tracing, AOTAutograd, Inductor's code generation and its Triton
  compiles); for the reference it is Triton compiling (or loading from its disk cache) the
  kernel, plus the GEMM's autotuning.

Variants, per op:

* eager PyTorch: the registry's baselines (``torch.softmax``; RMSNorm as the FP32 composition and
  as ``F.rms_norm`` on the FP32 sum, the same semantics; ``torch.mm``);
* ``reference``: the public wrapper the registry calls (argument checks, the cached row plan or
  the autotuner's lookup, the autograd decision, ``kernel[grid](...)``);
* ``custom op``: that wrapper registered with ``torch.library.custom_op`` (and a fake
  implementation, so that compile can trace it), called eagerly: the dispatcher's share;
* ``compile(custom op)``: ``torch.compile`` (``dynamic=False``) of a function that calls the custom
  op: the reference kernel inside a compiled graph, as a model would use it;
* ``compile(eager)``: ``torch.compile`` of the first eager baseline (Inductor writes the kernel).

Every call of a compiled function first runs Dynamo's guards (the inputs' dtypes, shapes,
strides, devices and ``requires_grad``, the Python float ``eps``, global state such as the grad
mode), then Inductor's Python wrapper, then the kernels. The printed overheads isolate those
shares: ``custom op - reference`` (the dispatcher), ``compile(custom op) - custom op`` (guards
and the compiled wrapper), ``compile(eager) - eager``; and ``guards`` of each compiled variant:
what the same calls save under ``torch.compiler.set_stance(skip_guard_eval_unsafe=True)``
(column ``no-guard us``), which skips the guard check (unsafe in general: here the inputs
never change), timed in ``--pairs`` pairs of back-to-back samples, checked and skipped, and
read as the median of the pairs' differences.

Inductor's caches are disabled by default (``torch.compiler.config.force_disable_caches``), so the
compile times are what a first run pays; ``--warm-cache`` leaves them on. Triton's own disk cache
of compiled kernels is not affected, and a throwaway compile runs first so that Inductor's
one-time start-up (imports, compile workers) is reported apart (``inductor_startup_s``).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import random
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
from _records import OneLineParser, positive_int  # noqa: E402

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402

SCRIPT = "compile_overhead"
DTYPE = torch.float16
SHAPES = {"softmax": (1024, 1024), "rmsnorm": (1024, 1024), "matmul": (1024, 1024, 1024)}
SEED = 20_240
NAMESPACE = "compile_overhead"  # the torch.library namespace of the custom ops

# Display names of the registry's eager baselines (op, baseline name) -> variant name.
EAGER_NAMES = {
    ("softmax", "torch"): "torch.softmax",
    ("rmsnorm", "composition"): "eager composition",
    ("rmsnorm", "torch_rms_norm"): "F.rms_norm (fp32 sum)",
    ("matmul", "torch"): "torch.mm",
}
REFERENCE = "reference"
CUSTOM_OP = "custom op"
COMPILE_CUSTOM_OP = "compile(custom op)"
COMPILE_EAGER = "compile(eager)"


def parse_args(argv=None) -> argparse.Namespace:
    parser = OneLineParser(prog=SCRIPT, description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", help="write the JSON (a script record) here")
    parser.add_argument(
        "--ops", nargs="+", choices=tuple(SHAPES), default=list(SHAPES), help="ops to measure"
    )
    parser.add_argument(
        "--calls", type=positive_int, default=2000, help="calls per host-clock sample"
    )
    parser.add_argument("--rounds", type=positive_int, default=7,
                        help="host-clock samples per variant, taken in shuffled turns")  # fmt: skip
    parser.add_argument("--pairs", type=positive_int, default=11,
                        help="pairs of back-to-back samples, guards checked and skipped, per "
                             "compiled variant")  # fmt: skip
    parser.add_argument("--no-compile", action="store_true", help="skip the compiled variants")
    parser.add_argument(
        "--warm-cache", action="store_true", help="leave Inductor's caches on (faster compiles)"
    )
    return parser.parse_args(argv)


# --------------------------------------------------------------------------- the variants


@functools.cache
def library_ops() -> dict[str, Callable]:
    """The reference public wrappers registered as ``torch.library`` custom ops, by op name.

    A custom op is opaque to ``torch.compile``: the graph calls it through the dispatcher, and
    the fake implementation tells the tracer the output's shape, dtype and device."""
    softmax = ops.get("softmax").kernel_function("reference")
    rmsnorm = ops.get("rmsnorm").kernel_function("reference")
    matmul = ops.get("matmul").kernel_function("reference")

    @torch.library.custom_op(f"{NAMESPACE}::softmax", mutates_args=())
    def library_softmax(x: torch.Tensor) -> torch.Tensor:
        return softmax(x)

    @library_softmax.register_fake
    def _(x):
        return x.new_empty(x.shape)

    @torch.library.custom_op(f"{NAMESPACE}::rmsnorm", mutates_args=())
    def library_rmsnorm(
        x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float
    ) -> torch.Tensor:
        return rmsnorm(x, residual, weight, eps)

    @library_rmsnorm.register_fake
    def _(x, residual, weight, eps):
        return x.new_empty(x.shape)

    @torch.library.custom_op(f"{NAMESPACE}::matmul", mutates_args=())
    def library_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return matmul(a, b)

    @library_matmul.register_fake
    def _(a, b):
        return a.new_empty((a.shape[0], b.shape[1]))

    return {"softmax": library_softmax, "rmsnorm": library_rmsnorm, "matmul": library_matmul}


def _calls_custom_op(op: str) -> Callable:
    library_op = library_ops()[op]

    def model(*args):  # what a model's forward would do: call the op among other code
        return library_op(*args)

    return model


@dataclass(frozen=True)
class Variant:
    name: str
    kind: str  # eager | reference | custom op | compiled
    make: Callable[[], Callable]  # builds the callable (a compiled one compiles on first call)


def variants(op: str, compile: bool = True) -> list[Variant]:
    """The variants measured for ``op``, in the order they are measured."""
    spec = ops.get(op)
    out = [
        Variant(EAGER_NAMES.get((op, name), f"eager {name}"), "eager", lambda fn=fn: fn)
        for name, fn in spec.baselines.items()
    ]
    out.append(Variant(REFERENCE, "reference", lambda: spec.kernel_function("reference")))
    out.append(Variant(CUSTOM_OP, "custom op", lambda: library_ops()[op]))
    if compile:
        first = next(iter(spec.baselines.values()))
        out.append(Variant(
            COMPILE_CUSTOM_OP, "compiled", lambda: timing.fresh_compile(_calls_custom_op(op))
        ))  # fmt: skip
        out.append(Variant(COMPILE_EAGER, "compiled", lambda: timing.fresh_compile(first)))
    return out


def positional(inputs: dict) -> tuple:
    """The inputs in the order every variant takes them: (x), (x, residual, weight, eps), (a, b)."""
    return tuple(inputs.values())


def bound(host_us: float | None, graph_us: float | None) -> str:
    """Which side sets the pace of an eager loop: the host (Python, dispatch, launch) or the GPU."""
    if host_us is None or graph_us is None:
        return "-"
    return "host" if host_us > graph_us else "device"


def overheads(rows: list[dict]) -> list[dict]:
    """Per op, the host microseconds one layer adds over the layer below it.

    ``custom op - reference``: the dispatcher; ``compile(custom op) - custom op``: Dynamo's guards
    and the compiled wrapper around the same call; ``compile(eager) - eager``: the same for
    Inductor's kernel against the first eager baseline (negative when compile fuses launches);
    ``guards of <compiled variant>``: its host time minus the same with the guards skipped."""
    out = []
    for op in dict.fromkeys(r["op"] for r in rows):
        host = {r["variant"]: r["host_us_per_call"] for r in rows if r["op"] == op}
        eager = next((r["variant"] for r in rows if r["op"] == op and r["kind"] == "eager"), None)
        for upper, lower in (
            (CUSTOM_OP, REFERENCE),
            (COMPILE_CUSTOM_OP, CUSTOM_OP),
            (COMPILE_EAGER, eager),
        ):
            if host.get(upper) is not None and host.get(lower) is not None:
                out.append({"op": op, "layer": f"{upper} - {lower}",
                            "host_us": host[upper] - host[lower]})  # fmt: skip
        for r in rows:
            skipped = r.get("host_us_guards_skipped")
            if r["op"] != op or skipped is None or r["host_us_per_call"] is None:
                continue
            guards = r.get("guards_us")  # paired, where measured so
            if guards is None:
                guards = r["host_us_per_call"] - skipped
            out.append({"op": op, "layer": f"guards of {r['variant']}", "host_us": guards})
    return out


# --------------------------------------------------------------------------- measuring


def disable_inductor_caches() -> str:
    """Turn Inductor's caches off for this process; what the JSON records about them."""
    for owner in ("torch.compiler.config", "torch._inductor.config"):
        try:
            module = sys.modules.get(owner) or __import__(owner, fromlist=["_"])
            module.force_disable_caches = True
            return f"disabled ({owner}.force_disable_caches)"
        except (ImportError, AttributeError):
            continue
    return "enabled (force_disable_caches not found)"


def inductor_startup_s() -> float:
    """Seconds of a throwaway compile: Inductor's one-time start, kept out of the first row."""
    t = torch.ones(8, device="cuda")
    compiled = timing.fresh_compile(lambda v: v * 2 + 1)
    started = time.perf_counter()
    compiled(t)
    torch.cuda.synchronize()
    return time.perf_counter() - started


def guards_paired(call: Callable, calls: int, pairs: int, seed: int = 0) -> dict | None:
    """A compiled ``call`` with Dynamo's guard check on and skipped, in ``pairs`` pairs of
    samples taken back to back (the order drawn for each pair, so the host's drift cancels
    within a pair): the median host us per call with the guards skipped, and the median over
    the pairs of the difference (what the guards cost). None where this torch has no such
    switch. Skipping is safe here only because the inputs never change."""
    try:
        with torch.compiler.set_stance(skip_guard_eval_unsafe=True):
            call()
    except Exception:  # no such switch in this torch, or it refused: the columns stay empty
        return None

    def sample_us(skipped: bool) -> float:
        stance = (torch.compiler.set_stance(skip_guard_eval_unsafe=True) if skipped
                  else contextlib.nullcontext())  # fmt: skip
        with stance:
            start = time.perf_counter()
            for _ in range(calls):
                call()
            elapsed = time.perf_counter() - start
        torch.cuda.synchronize()
        return elapsed / calls * 1e6

    order = random.Random(seed)
    skipped, costs = [], []
    for _ in range(pairs):
        first = order.random() < 0.5  # True: the skipped sample first
        one, two = sample_us(first), sample_us(not first)
        checked, unchecked = (two, one) if first else (one, two)
        skipped.append(unchecked)
        costs.append(checked - unchecked)
    return {"host_us_guards_skipped": statistics.median(skipped),
            "guards_us": statistics.median(costs)}  # fmt: skip


def _one_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0][:160] if text else ''}"


def prepare(op: str, variant: Variant) -> tuple[dict, Callable | None]:
    """The variant's row with its first call (compile included), oracle check and graph time,
    and the call to time on the host; None for a variant that failed (its row says why)."""
    spec = ops.get(op)
    shape = SHAPES[op]
    inputs = spec.inputs(shape, DTYPE, SEED, device="cuda")
    row = {
        "op": op, "shape": spec.shape_label(shape), "variant": variant.name,
        "kind": variant.kind, "first_call_ms": None, "host_us_per_call": None,
        "graph_us": None, "bound": "-", "host_us_guards_skipped": None, "guards_us": None,
        "failure": "",
    }  # fmt: skip
    try:
        fn = variant.make()
        call = functools.partial(fn, *positional(inputs))
        started = time.perf_counter()
        out = call()
        torch.cuda.synchronize()
        row["first_call_ms"] = (time.perf_counter() - started) * 1e3
        row["failure"] = timing.oracle_check(spec, (out,), inputs, DTYPE)
        if not row["failure"]:
            row["graph_us"] = timing.graph_ms(call) * 1e3
            return row, call
    except Exception as error:  # a variant that does not compile or run is a result
        row["failure"] = _one_line(error)
    return row, None


def measure_host(rows: list[dict], calls: dict[str, Callable], args) -> None:
    """One op's host times: its variants in shuffled turns (``interleaved_host_us``), then
    each compiled one's guards in pairs (``guards_paired``); written into ``rows``."""
    if not calls:
        return
    host = timing.interleaved_host_us(calls, args.calls, rounds=args.rounds, seed=0)
    for row in rows:
        if row["variant"] in host:
            row["host_us_per_call"] = host[row["variant"]]
            row["bound"] = bound(row["host_us_per_call"], row["graph_us"])
            if row["kind"] == "compiled":
                row.update(guards_paired(calls[row["variant"]], args.calls, args.pairs) or {})


def print_table(rows: list[dict], layers: list[dict]) -> None:
    print(f"{'op':<8} {'variant':<22} {'host us/call':>12} {'no-guard us':>11} {'graph us':>9} "
          f"{'bound':>6} {'1st call ms':>11}  note")  # fmt: skip
    for r in rows:
        print(f"{r['op']:<8} {r['variant']:<22} {timing.fmt(r['host_us_per_call'], '.2f'):>12} "
              f"{timing.fmt(r['host_us_guards_skipped'], '.2f'):>11} "
              f"{timing.fmt(r['graph_us'], '.2f'):>9} {r['bound']:>6} "
              f"{timing.fmt(r['first_call_ms'], '.1f'):>11}  {r['failure']}")  # fmt: skip
    if layers:
        print("host us each layer adds per call:")
        for op in dict.fromkeys(x["op"] for x in layers):
            parts = [f"{x['layer']} {x['host_us']:+.2f}" for x in layers if x["op"] == op]
            print(f"  {op:<8} " + "; ".join(parts))


def main(argv=None) -> int:
    args = parse_args(argv)
    timing.require_gpu(f"{SCRIPT}.py")
    started = time.perf_counter()
    timing.warm_gpu()
    caches = "enabled (--warm-cache)" if args.warm_cache else disable_inductor_caches()
    warnings.filterwarnings("ignore", message=".*force disabled by .*force_disable_caches")
    startup = None if args.no_compile else inductor_startup_s()
    if startup is not None:
        print(f"Inductor start-up (throwaway compile): {startup:.1f} s; caches {caches}")
    rows = []
    for op in dict.fromkeys(args.ops):
        op_rows, calls = [], {}
        for variant in variants(op, compile=not args.no_compile):
            row, call = prepare(op, variant)
            op_rows.append(row)
            if call is not None:
                calls[variant.name] = call
            at = time.perf_counter() - started
            print(f"  {op} {variant.name}: first call {timing.fmt(row['first_call_ms'], '.0f')} "
                  f"ms (at {at:.0f} s) {row['failure']}", flush=True)  # fmt: skip
        measure_host(op_rows, calls, args)
        rows += op_rows
    layers = overheads(rows)
    seconds = round(time.perf_counter() - started, 1)
    print()
    print_table(rows, layers)
    shapes = ", ".join(f"{op} {ops.get(op).shape_label(SHAPES[op])}" for op in args.ops)
    print(f"{seconds:.0f} s; {ops.dtype_name(DTYPE)} {shapes}")
    payload = {
        "script": f"{SCRIPT}.py", "environment": timing.environment(),
        "dtype": ops.dtype_name(DTYPE),
        "shapes": {op: list(shape) for op, shape in SHAPES.items() if op in args.ops},
        "calls": args.calls, "rounds": args.rounds, "pairs": args.pairs,
        "inductor_caches": caches, "inductor_startup_s": startup,
        "rows": rows, "overheads": layers, "seconds": seconds,
    }  # fmt: skip
    timing.write_json(args.output, payload, script=__file__, argv=argv)
    return 1 if any(r["failure"] for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
