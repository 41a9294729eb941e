"""Three ways to specialize a row kernel: how often each compiles, and how fast it runs (GPU only).

    python3 scripts/specialization_sweep.py --output results/h200/specialization.json   (~30 s)

Triton compiles a kernel once per combination of its ``tl.constexpr`` values, and of what it
specializes the other integer arguments on (whether one is 1 or a multiple of 16) unless they
are listed in ``do_not_specialize``. The softmax forward (the whole row in registers, with the
row plan's block, rows per program and warps) is launched three ways:

(a) every size compile-time: ``N`` and ``N_ROWS`` are ``tl.constexpr``. The compiler knows
    every size, and every new batch size compiles again.
(b) every size runtime: ``n_cols`` and ``n_rows`` are runtime arguments, not specialized. One
    binary per power-of-two block serves every width that rounds up to it and every batch
    size. Its lanes past the width are masked, as in (c), whose block is the same power of
    two; what (b) gives up is the compiler's knowledge of the width: a mask ``cols < n_cols``
    against an unknown ``n_cols`` is not known to be constant over a 16-byte vector.
(c) the course's design: the reference kernel itself (``reference/kernels/softmax.py``):
    ``N``, the block and the rows per program are ``tl.constexpr``, the row count a runtime
    argument in ``do_not_specialize``. One compile per width; a new batch size reuses it.

In all three the row strides are ordinary arguments, which Triton specializes on being a
multiple of 16: a width like 781 gets its own binary even in (b).

For every width x batch size, each design's first call is timed on the host (the call and a
``torch.cuda.synchronize()``: a compile when the design has no binary for it yet, else a
launch), the compiled variants are counted (``JITFunction.device_caches``, before and after),
the output is checked against the float64 oracle, and only then is the device time measured
by CUDA-graph replay. Triton's on-disk cache would turn a compile into a file read, so
``TRITON_CACHE_DIR`` points to a fresh temporary directory for the run (removed at the end),
and a throwaway kernel is compiled first: building Triton's driver helpers and the first use
of the compiler are not charged to the first design. A design's first compile also builds its
kernel launcher (a small C module, once per kernel signature): see ``first compile s``.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
from _records import OneLineParser  # noqa: E402

# isort: split
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from learning import ops  # noqa: E402
from learning.runtime import default_device  # noqa: E402
from reference.kernels import softmax  # noqa: E402
from reference.kernels.row_plan import RowPlan, check_rows, choose_row_plan  # noqa: E402

ROW_COUNTS = (1000, 1024, 4096, 4097, 16384)
WIDTHS = (781, 1024, 3072, 4096)
MAX_TENSOR_BYTES = 512 * 1024 * 1024  # refuse shapes whose input exceeds this


# --------------------------------------------------------------------------- the two variants


@triton.jit
def _softmax_every_size_constexpr(
    x_ptr,  # *Pointer* to the input, M x N, last dimension contiguous
    y_ptr,  # *Pointer* to the output, M x N, x's dtype
    x_row_stride,  # elements between consecutive rows of x
    y_row_stride,  # elements between consecutive rows of y
    N_ROWS: tl.constexpr,  # M: one compiled variant per batch size
    N: tl.constexpr,  # row width: one compiled variant per width
    BLOCK: tl.constexpr,  # power of two >= N: the whole row is one block
    ROWS: tl.constexpr,  # rows per program
):
    """Design (a): the reference forward's body with the row count a ``tl.constexpr``."""
    rows = tl.program_id(axis=0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    col_mask = (cols < N)[None, :]
    read_rows = tl.minimum(rows, N_ROWS - 1).to(tl.int64)
    x = tl.load(
        x_ptr + read_rows[:, None] * x_row_stride + cols[None, :], mask=col_mask,
        other=float("-inf"),
    ).to(tl.float32)  # fmt: skip
    numerator = tl.exp(x - tl.max(x, axis=1)[:, None])
    y = numerator * (1.0 / tl.sum(numerator, axis=1))[:, None]
    tl.store(
        y_ptr + rows.to(tl.int64)[:, None] * y_row_stride + cols[None, :],
        y.to(y_ptr.dtype.element_ty), mask=(rows < N_ROWS)[:, None] & col_mask,
    )  # fmt: skip


@triton.jit(do_not_specialize=["n_rows", "n_cols"])
def _softmax_every_size_runtime(
    x_ptr,  # *Pointer* to the input, M x N, last dimension contiguous
    y_ptr,  # *Pointer* to the output, M x N, x's dtype
    n_rows,  # runtime: M, never specialized
    n_cols,  # runtime: N, never specialized (one binary serves every width up to BLOCK)
    x_row_stride,  # elements between consecutive rows of x
    y_row_stride,  # elements between consecutive rows of y
    BLOCK: tl.constexpr,  # power of two >= n_cols
    ROWS: tl.constexpr,  # rows per program
):
    """Design (b): the reference forward's body with the width a runtime argument too."""
    rows = tl.program_id(axis=0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    col_mask = (cols < n_cols)[None, :]
    read_rows = tl.minimum(rows, n_rows - 1).to(tl.int64)
    x = tl.load(
        x_ptr + read_rows[:, None] * x_row_stride + cols[None, :], mask=col_mask,
        other=float("-inf"),
    ).to(tl.float32)  # fmt: skip
    numerator = tl.exp(x - tl.max(x, axis=1)[:, None])
    y = numerator * (1.0 / tl.sum(numerator, axis=1))[:, None]
    tl.store(
        y_ptr + rows.to(tl.int64)[:, None] * y_row_stride + cols[None, :],
        y.to(y_ptr.dtype.element_ty), mask=(rows < n_rows)[:, None] & col_mask,
    )  # fmt: skip


@triton.jit
def _prime_kernel(x_ptr, BLOCK: tl.constexpr):
    """Compiled once before any measurement: Triton's driver helpers and compiler warm up."""
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets) + 1.0)


def whole_row_plan(n_rows: int, n_cols: int, element_size: int) -> RowPlan:
    """The rule's softmax-forward plan; ValueError when it walks the row in chunks."""
    plan = choose_row_plan(n_rows, n_cols, element_size, passes=2)
    if plan.chunked:
        raise ValueError(
            f"width {n_cols} is walked in chunks by the row plan; the variants keep whole rows"
        )
    return plan


def softmax_every_size_constexpr(x: torch.Tensor) -> torch.Tensor:
    """Design (a): N and the row count compile-time."""
    n_rows, n_cols = check_rows(x, "softmax (a)")
    y = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    if n_rows:
        plan = whole_row_plan(n_rows, n_cols, x.element_size())
        _softmax_every_size_constexpr[plan.grid(n_rows)](
            x, y, x.stride(0), y.stride(0),
            N_ROWS=n_rows, N=n_cols, BLOCK=plan.block_cols, ROWS=plan.rows_per_program,
            num_warps=plan.num_warps, num_stages=plan.num_stages,
        )  # fmt: skip
    return y


def softmax_every_size_runtime(x: torch.Tensor) -> torch.Tensor:
    """Design (b): N and the row count runtime, the block the width's power of two."""
    n_rows, n_cols = check_rows(x, "softmax (b)")
    y = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    if n_rows:
        plan = whole_row_plan(n_rows, n_cols, x.element_size())
        _softmax_every_size_runtime[plan.grid(n_rows)](
            x, y, n_rows, n_cols, x.stride(0), y.stride(0),
            BLOCK=plan.block_cols, ROWS=plan.rows_per_program,
            num_warps=plan.num_warps, num_stages=plan.num_stages,
        )  # fmt: skip
    return y


# design -> (label, launch(x), the @triton.jit kernels whose binaries it counts)
DESIGNS = {
    "a": ("(a) N, n_rows constexpr", softmax_every_size_constexpr,
          (_softmax_every_size_constexpr,)),
    "b": ("(b) N, n_rows runtime", softmax_every_size_runtime, (_softmax_every_size_runtime,)),
    "c": ("(c) N constexpr, n_rows runtime", softmax.softmax_fwd,
          (softmax._softmax_fwd_kernel, softmax._softmax_fwd_chunked_kernel)),
}  # fmt: skip


# --------------------------------------------------------------------------- counting


def compiled_variants(kernel) -> int:
    """How many binaries Triton holds for ``kernel`` over all devices (0 when interpreted).

    Triton 3.6 keeps, per device, ``(binaries by key, key cache, target, backend, binder)``."""
    caches = getattr(kernel, "device_caches", None)
    if caches is None:
        return 0
    return sum(len(entry[0]) for entry in caches.values())


def design_variants(design: str) -> int:
    return sum(compiled_variants(kernel) for kernel in DESIGNS[design][2])


def summarize(entries: list[dict]) -> dict:
    """Per design: compiles, their host seconds (first and median), the first call of a
    binary it already had, and the median device time over the shapes it passed."""
    summary = {}
    for design in DESIGNS:
        mine = [e for e in entries if e["design"] == design]
        compiles = [e["first_call_ms"] / 1e3 for e in mine if e.get("compiled")]
        cached = [e["first_call_ms"] for e in mine if e.get("compiled") == 0]
        timed = [e["ms"] for e in mine if e.get("ms")]
        summary[design] = {
            "label": DESIGNS[design][0],
            "shapes": len(mine),
            "compiles": sum(e.get("compiled") or 0 for e in mine),
            "compile_s": sum(compiles),
            "first_compile_s": compiles[0] if compiles else None,
            "median_compile_s": statistics.median(compiles) if compiles else None,
            "median_cached_first_call_ms": statistics.median(cached) if cached else None,
            "median_device_ms": statistics.median(timed) if timed else None,
            "failed": sum(1 for e in mine if "error" in e),
        }
    return summary


# --------------------------------------------------------------------------- measuring


def fresh_triton_cache() -> str:
    """Point Triton's on-disk cache to a new empty directory (read when Triton next compiles)."""
    path = tempfile.mkdtemp(prefix="triton-cache-specialization-")
    os.environ["TRITON_CACHE_DIR"] = path
    if triton.knobs.cache.dir != path:  # set in code earlier: the environment is not read
        triton.knobs.cache.dir = path
    return path


def synchronize() -> None:
    if default_device() == "cuda":  # the tests run the flow on the interpreter's cpu
        torch.cuda.synchronize()


def prime() -> float:
    """Compile and run a throwaway kernel; its host seconds."""
    start = time.perf_counter()
    x = torch.zeros(16, device=default_device(), dtype=torch.float32)
    _prime_kernel[(1,)](x, BLOCK=16)
    synchronize()
    return time.perf_counter() - start


def measure(design: str, x, spec, inputs, dtype, rep_ms: int) -> dict:
    """First call (host, synced; a compile if the design has no binary yet), variants added,
    the oracle check, then the graph-replay device time."""
    launch = DESIGNS[design][1]
    entry = {"design": design}
    try:
        before = design_variants(design)
        start = time.perf_counter()
        y = launch(x)
        synchronize()
        entry["first_call_ms"] = (time.perf_counter() - start) * 1e3
        entry["compiled"] = design_variants(design) - before
        reason = timing.oracle_check(spec, (y,), inputs, dtype)
        del y
        if reason:
            entry["error"] = f"oracle: {reason}"[:300]
            return entry
        entry["ms"] = timing.graph_ms(functools.partial(launch, x), rep_ms)
        entry["tbps"] = timing.terabytes_per_second(
            spec.logical_bytes(tuple(x.shape), dtype), entry["ms"]
        )
    except Exception as error:  # out of resources, a compile failure: report, go on
        entry["error"] = repr(error)[:300]
    return entry


def print_entry(shape: str, entry: dict) -> None:
    design = DESIGNS[entry["design"]][0]
    if "first_call_ms" not in entry:
        print(f"  {shape:>11s}  {design:34s} ERROR {entry.get('error', '')[:100]}", flush=True)
        return
    what = "compiled" if entry["compiled"] else "cached  "
    print(
        f"  {shape:>11s}  {design:34s} {what} first call {entry['first_call_ms']:9.2f} ms  "
        + (f"device {timing.fmt(entry['ms'])} ms ({timing.fmt(entry['tbps'], '.2f')} TB/s)"
           if "ms" in entry else f"ERROR {entry['error'][:100]}"),
        flush=True,
    )  # fmt: skip


def print_tables(entries: list[dict], summary: dict, shapes: list[str]) -> None:
    print(f"\n{'design':34s} {'compiles':>8s} {'compile s':>9s} {'first compile s':>15s} "
          f"{'median compile s':>16s} {'cached call ms':>14s}")  # fmt: skip
    for row in summary.values():
        print(f"{row['label']:34s} {row['compiles']:8d} {row['compile_s']:9.2f} "
              f"{timing.fmt(row['first_compile_s'], '.2f'):>15s} "
              f"{timing.fmt(row['median_compile_s'], '.2f'):>16s} "
              f"{timing.fmt(row['median_cached_first_call_ms'], '.3f'):>14s}")  # fmt: skip
    print("\ndevice ms per shape (graph-replay medians)")
    print(f"{'shape':>11s} {'(a)':>8s} {'(b)':>8s} {'(c)':>8s} {'(a)/(c)':>8s} {'(b)/(c)':>8s}")
    by_key = {(e["shape"], e["design"]): e.get("ms") for e in entries}
    for shape in shapes:
        a, b, c = (by_key.get((shape, d)) for d in DESIGNS)
        print(f"{shape:>11s} {timing.fmt(a):>8s} {timing.fmt(b):>8s} {timing.fmt(c):>8s} "
              f"{timing.fmt(a / c if a and c else None, '.3f'):>8s} "
              f"{timing.fmt(b / c if b and c else None, '.3f'):>8s}")  # fmt: skip


# --------------------------------------------------------------------------- main


def parse_sizes(text: str, what: str) -> list[int]:
    """``"1000,1024"`` -> ``[1000, 1024]``: positive integers, duplicates dropped."""
    items = [s.strip() for s in text.split(",") if s.strip()]
    if not items or not all(s.isdigit() and int(s) > 0 for s in items):
        raise ValueError(f"{what} must be comma-separated positive integers, got {text!r}")
    return list(dict.fromkeys(int(s) for s in items))


def check_shapes(row_counts, widths, element_size: int) -> None:
    """ValueError (one line) for a width the plan chunks or an input above the size cap."""
    for width in widths:
        whole_row_plan(1, width, element_size)
    largest = max(row_counts) * max(widths) * element_size
    if largest > MAX_TENSOR_BYTES:
        raise ValueError(
            f"the largest input is {largest / 2**20:.0f} MiB; at most "
            f"{MAX_TENSOR_BYTES // 2**20} MiB"
        )


def parse_args(argv=None) -> argparse.Namespace:
    parser = OneLineParser(prog="specialization_sweep.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", help="write the JSON here (a script record)")
    parser.add_argument("--rows", default=",".join(map(str, ROW_COUNTS)), help="batch sizes")
    parser.add_argument("--widths", default=",".join(map(str, WIDTHS)), help="row widths")
    parser.add_argument("--dtype", default="float16", choices=["float16", "bfloat16", "float32"])
    parser.add_argument("--rep-ms", type=int, default=timing.GRAPH_REP_MS,
                        help="graph-replay ms per measurement")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        args.rows = parse_sizes(args.rows, "--rows")
        args.widths = parse_sizes(args.widths, "--widths")
        element_size = torch.empty((), dtype=ops.dtype_from_name(args.dtype)).element_size()
        check_shapes(args.rows, args.widths, element_size)
    except ValueError as error:
        parser.error(str(error))
    if args.rep_ms < 1:
        parser.error("--rep-ms must be at least 1")
    if args.output and Path(args.output).is_dir():
        parser.error(f"--output {args.output} is a directory")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    timing.require_gpu("specialization_sweep.py")
    started = time.perf_counter()
    cache_dir = fresh_triton_cache()  # before anything compiles
    try:
        print(f"Triton's on-disk cache: a fresh empty directory, {cache_dir} (TRITON_CACHE_DIR), "
              f"removed at the end: every compile below is a real compile")  # fmt: skip
        before = {d: design_variants(d) for d in DESIGNS}
        warm_ms = timing.warm_gpu()
        prime_s = prime()
        print(f"warmed the GPU for {warm_ms:.0f} ms; compiled a throwaway kernel first "
              f"({prime_s:.2f} s); binaries held before the sweep: {before}")  # fmt: skip
        dtype = ops.dtype_from_name(args.dtype)
        spec = ops.get("softmax")
        entries, shapes = [], []
        for width in args.widths:
            for n_rows in args.rows:
                shape = f"{n_rows}x{width}"
                shapes.append(shape)
                inputs = spec.inputs((n_rows, width), dtype, args.seed, default_device())
                for design in DESIGNS:
                    entry = {"shape": shape, **measure(design, inputs["x"], spec, inputs, dtype,
                                                       args.rep_ms)}  # fmt: skip
                    print_entry(shape, entry)
                    entries.append(entry)
                del inputs
                if default_device() == "cuda":
                    torch.cuda.empty_cache()
        summary = summarize(entries)
        variants = {d: design_variants(d) for d in DESIGNS}
        cubins = len(list(Path(cache_dir).rglob("*.cubin")))  # a check of the count above
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
    payload = {
        "script": "specialization_sweep.py", "environment": timing.environment(),
        "args": vars(args), "dtype": args.dtype,
        "triton_cache": "a fresh temporary TRITON_CACHE_DIR, removed at the end",
        "warm_ms": warm_ms, "prime_s": prime_s, "variants_before": before,
        "variants_after": variants, "cubins_in_fresh_cache": cubins, "designs": summary,
        "measurements": entries,
    }  # fmt: skip
    print_tables(entries, summary, shapes)
    print(f"\nfirst call = the call and a synchronize on the host: a compile (Triton, ptxas, "
          f"loading) the first time a design meets a binary it lacks, else a launch. Binaries "
          f"held at the end: {variants}; {cubins} cubin files in the fresh cache (the "
          f"throwaway kernel's included).")  # fmt: skip
    print(f"{time.perf_counter() - started:.0f} s")
    timing.write_json(args.output, payload, script=__file__, argv=argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
