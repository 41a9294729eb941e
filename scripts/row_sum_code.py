"""Which line of the reference's row sum costs it its last 0.3% against Inductor? (GPU, ~2 min)

    python3 scripts/row_sum_code.py --output results/h200/row-sum-code.json
    python3 scripts/row_sum_code.py --sass       # the instruction counts only; no GPU needed

Paired by round, torch.compile's fp32 row sum at 16384 x 4096 beats the reference by 0.2-0.6%
in 13-15 of 15 rounds (``results/NOTES.md``), and no launch plan closes it
(``streaming-plans.log``). Nsight Compute counts 72 instructions a warp in the reference
against Inductor's 64 (``ncu-fp32-sum-16384x4096-*.log``), and ``streaming-variants.log``
ruled out the ``evict_first`` loads and the int32 offsets one at a time.

The reference has since taken up what this probe found (``evict_first`` loads, the first
step as the accumulator's start; ``reference/kernels/reductions.py``). The probe rewrites
the current module back to the version it measured (``before``: ``_variants.REDUCTIONS_BEFORE``)
and each candidate from there, so a run today times the same kernels. In the recorded runs
(``row-sum-code-run1.log``, ``-run2.log`` and ``row-sum-code.log``) the label ``reference``
is that earlier version; in a run made since, it is the current kernel, which should read as
``evict_first+first chunk`` does.

For each case this script times the reference twice (an A/A pair), the reference rewritten
(``_variants.rewritten``) several ways, and torch.compile (``dynamic=False``), all checked
against the float64 oracle first, interleaved with every graph captured first, and prints
the ratio of medians and the paired ratio against compile with the rounds lost and a sign
test (``_paired_rows.paired_rows``). The rewrites:

* ``first chunk``: the accumulator starts from the first chunk's values instead of zeros (or
  -inf for the max). ``x + 0.0`` is not ``x`` when ``x`` is -0.0, so the compiler keeps an
  add of each loaded value to the zero register; this removes them (8 of 79 instructions).
* ``stride N``: the row offset multiplies by the width ``N``, a compile-time constant, instead
  of the run-time row stride (right only for contiguous rows, as every input here is).
* ``no clamp``: a program of one row (``ROWS == 1``) addresses its row without
  ``minimum(rows, n_rows - 1)``, which only a stacked program's last rows need.
* ``every difference``: all three, with ``evict_first`` loads.

At the case itself two more candidates separate the binary from everything else:
``every difference`` at Inductor's plan (2048-wide steps, 16 warps), and Inductor's own
kernel, its source read from the recorded ``ncu-fp32-sum-16384x4096-compile.log`` and
launched the way the reference launches (``kernel[grid]``, captured in a graph like every
candidate) with the configuration that profile shows (one row a program, 16 warps). If that
kernel ties compile and the reference does not, the difference is in the code.

``--sass`` compiles the reference and each rewrite for sm_90 (Triton's own ``ptxas`` and
``cuobjdump``; no GPU) and prints each binary's instructions: all of them, the floating-point
adds and min/max, and those adding or comparing against zero or -inf. With ``--yours`` it
compiles your kernels too (``exercises/kernels/reductions.py``), the same way.
"""

from __future__ import annotations

import collections
import importlib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
from _paired_rows import paired_rows, print_table  # noqa: E402
from _records import REPO_ROOT, OneLineParser, positive_int  # noqa: E402
from _variants import REDUCTIONS_BEFORE, module_from_source, rewritten  # noqa: E402
from kernel_binary import cuobjdump  # noqa: E402  (Triton's cuobjdump, its listings kept)

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402
from learning.bench.variants import fresh_compiled  # noqa: E402
from learning.runtime import interpreting  # noqa: E402
from reference.kernels import reductions  # noqa: E402
from reference.kernels.row_plan import RowPlan, choose_row_plan  # noqa: E402

CASES = (("sum", (16384, 4096), torch.float32), ("max", (16384, 4096), torch.float32),
         ("sum", (4096, 32768), torch.float32), ("sum", (65536, 128), torch.float32),
         ("sum", (16384, 4096), torch.float16), ("max", (16384, 4096), torch.bfloat16),
         ("sum", (4096, 32768), torch.bfloat16), ("sum", (4096, 32768), torch.float16),
         ("sum", (1024, 1024), torch.float32))  # fmt: skip
KERNELS = {"sum": ("_row_sum_kernel", "row_sum"), "max": ("_row_max_kernel", "row_max")}

_LOOP = "    for col_start in tl.range(0, N, BLOCK, num_stages=NUM_STAGES):"
_FIRST = ("    cols = tl.arange(0, BLOCK)\n    acc = tl.load(row_start + cols[None, :], "
          "mask=(cols < N)[None, :], other={other}).to(tl.float32)\n"
          "    for col_start in tl.range(BLOCK, N, BLOCK, num_stages=NUM_STAGES):")  # fmt: skip
_ROW_START = ("    row_start = x_ptr + tl.minimum(rows, n_rows - 1).to(tl.int64)[:, None]"
              " * x_row_stride")  # fmt: skip
FIRST_CHUNK = [
    (f"    acc = tl.zeros((ROWS, BLOCK), dtype=tl.float32)\n{_LOOP}",
     _FIRST.format(other="0.0"), 1),
    (f'    acc = tl.full((ROWS, BLOCK), float("-inf"), dtype=tl.float32)\n{_LOOP}',
     _FIRST.format(other='float("-inf")'), 1),
]  # fmt: skip
STRIDE_N = [(_ROW_START, _ROW_START.replace("x_row_stride", "N"), 2)]


def _no_clamp(row_start: str) -> list:
    """One row a program: address it without the clamp (the stacked case keeps it)."""
    one_row = row_start.replace("tl.minimum(rows, n_rows - 1)", "rows")
    return [(row_start, f"    if ROWS == 1:\n    {one_row}\n    else:\n    {row_start}", 2)]


NO_CLAMP = _no_clamp(_ROW_START)


def _evict_first(loads: int) -> list:
    """``evict_first`` on each row load (``loads`` a kernel: 2 once the first chunk is peeled)."""
    return [("other=0.0)", 'other=0.0, eviction_policy="evict_first")', loads),
            ('other=float("-inf"))', 'other=float("-inf"), eviction_policy="evict_first")',
             loads)]  # fmt: skip


_STRIDE_N_NO_CLAMP = STRIDE_N + _no_clamp(_ROW_START.replace("x_row_stride", "N"))
REWRITES = {
    "first chunk": FIRST_CHUNK,
    "stride N": STRIDE_N,
    "no clamp": NO_CLAMP,
    "every difference": FIRST_CHUNK + _STRIDE_N_NO_CLAMP + _evict_first(2),
    # the same with one difference left out
    "all but evict_first": FIRST_CHUNK + _STRIDE_N_NO_CLAMP,
    "all but first chunk": _STRIDE_N_NO_CLAMP + _evict_first(1),
    "all but stride N": FIRST_CHUNK + NO_CLAMP + _evict_first(2),
    "all but no clamp": FIRST_CHUNK + STRIDE_N + _evict_first(2),
    # evict_first alone and with one other difference
    "evict_first": _evict_first(1),
    "evict_first+first chunk": FIRST_CHUNK + _evict_first(2),
    "evict_first+no clamp": NO_CLAMP + _evict_first(1),
}  # fmt: skip
INDUCTOR_CASE = ("sum", (16384, 4096), torch.float32)
INDUCTOR_PLAN = RowPlan(block_cols=2048, rows_per_program=1, num_warps=16, chunked=True)
INDUCTOR_LOG = REPO_ROOT / "results/h200/ncu-fp32-sum-16384x4096-compile.log"
POINTER_TYPES = {torch.float32: "*fp32", torch.float16: "*fp16", torch.bfloat16: "*bf16"}


def variants(directory: Path, labels=tuple(REWRITES)) -> dict[str, object]:
    """The reductions module as it was before this probe's change (``before``:
    ``_variants.REDUCTIONS_BEFORE``) and rewritten from there each way of :data:`REWRITES`
    named in ``labels``: {label: module}."""
    modules = {"before": rewritten(reductions, REDUCTIONS_BEFORE, directory, "reductions_before")}
    for index, label in enumerate(labels):
        modules[label] = rewritten(reductions, REDUCTIONS_BEFORE + REWRITES[label], directory,
                                   f"reductions_{index}")  # fmt: skip
    return modules


def inductor_kernel(log: Path, directory: Path):
    """Inductor's row-sum kernel, its source as the recorded log prints it, as a JITFunction."""
    lines = [line.partition("[__output_code] ")[2] for line in log.read_text().splitlines()
             if "[__output_code] " in line]  # fmt: skip
    start = next(i for i, line in enumerate(lines) if line.startswith("@triton.jit"))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("'''"))
    source = "import triton\nimport triton.language as tl\n\n" + "\n".join(lines[start:end])
    return module_from_source(source, directory, "inductor_row_sum").triton_red_fused_sum_0


def case_calls(op: str, shape, dtype, inputs: dict, modules: dict) -> dict[str, object]:
    """The reference twice, each variant and compile, as zero-argument calls (and at
    :data:`INDUCTOR_CASE`, every difference at once and Inductor's own kernel)."""
    spec = ops.get(op)
    (x,) = inputs.values()
    reference = spec.kernel_function("reference")
    calls = {"reference": lambda: reference(x), "reference again": lambda: reference(x)}
    for label, module in modules.items():
        if not label.startswith("inductor"):
            function = getattr(module, KERNELS[op][1])
            calls[label] = lambda f=function: f(x)
    if (op, tuple(shape), dtype) == INDUCTOR_CASE:
        if "every difference" in modules:
            every = modules["every difference"].row_sum
            calls["every difference, 2048 w16"] = lambda: every(x, INDUCTOR_PLAN)
        kernel, out = modules["inductor kernel"], torch.empty(shape[0], dtype=dtype, device="cuda")

        def inductor():
            kernel[(shape[0],)](x, out, shape[0], shape[1], XBLOCK=1, R0_BLOCK=2048,
                                num_warps=16, num_stages=1)  # fmt: skip
            return out

        calls["Inductor's kernel"] = inductor
    compiled = fresh_compiled(next(iter(spec.baselines.values())))
    calls["compile"] = lambda: compiled(x)
    return calls


def sass_counts(module, op: str, shape, dtype) -> collections.Counter:
    """Compile ``module``'s kernel for ``op`` at ``shape`` for sm_90 and count its instructions:
    ``all``, ``float`` (FADD, FMNMX), ``float with a constant`` (those reading RZ, the zero
    register, or -inf) and ``global loads`` (LDG), and its ``registers`` a thread (as
    ``cuobjdump -res-usage`` reads them). Needs kernels compiled, not interpreted."""
    import triton  # the course imported it already, with the backend it chose
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    n_rows, n_cols = shape
    plan = choose_row_plan(n_rows, n_cols, dtype.itemsize, passes=1)
    kernel = getattr(module, KERNELS[op][0])
    pointer = POINTER_TYPES[dtype]
    signature = {"x_ptr": pointer, "out_ptr": pointer, "n_rows": "i32", "x_row_stride": "i32",
                 "N": "constexpr", "BLOCK": "constexpr", "ROWS": "constexpr",
                 "NUM_STAGES": "constexpr"}  # fmt: skip
    constants = {"N": n_cols, "BLOCK": plan.block_cols, "ROWS": plan.rows_per_program,
                 "NUM_STAGES": plan.num_stages}  # fmt: skip
    aligned = [["tt.divisibility", 16]]  # as Triton specializes 16-byte pointers and strides
    attributes = {(0,): aligned, (1,): aligned}
    if n_cols % 16 == 0:
        attributes[(3,)] = aligned
    source = ASTSource(kernel, signature, constants, attributes)
    binary = triton.compile(source, target=GPUTarget("cuda", 90, 32),
                            options={"num_warps": plan.num_warps, "num_stages": plan.num_stages})
    listing = cuobjdump(binary.asm["cubin"], "-res-usage", "-sass")
    counts = collections.Counter()
    registers = re.search(r"\bREG:(\d+)", listing)
    counts["registers"] = int(registers.group(1)) if registers else 0
    for line in listing.splitlines():
        match = re.match(r"\s+/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)([^;]*);", line)
        if not match or match.group(1) == "NOP":
            continue
        opcode, operands = match.group(1).split(".")[0], match.group(2)
        counts["all"] += 1
        counts["global loads"] += opcode == "LDG"
        if opcode in ("FADD", "FMNMX"):
            counts["float"] += 1
            if re.search(r"\bRZ\b|-INF", operands):
                counts["float with a constant"] += 1
    return counts


def print_sass(modules: dict) -> None:
    print(f"{'case':26} {'kernel':24} {'regs':>4} {'instructions':>12} {'float':>6} "
          f"{'with 0/-inf':>11}")  # fmt: skip
    for op, shape, dtype in CASES:
        case = f"{op} {shape[0]}x{shape[1]} {str(dtype).removeprefix('torch.')}"
        for label, module in {"reference": reductions, **modules}.items():
            if not hasattr(module, KERNELS[op][0]):
                continue
            try:
                counts = sass_counts(module, op, shape, dtype)
            except Exception as error:  # a learner's kernel that does not compile yet
                reason = (str(error).strip().splitlines() or [type(error).__name__])[-1]
                print(f"{case:26} {label:24} does not compile: {reason}")
                continue
            unwritten = "  (no loads: not written yet?)" if not counts["global loads"] else ""
            floats, with_constant = counts["float"], counts["float with a constant"]
            print(f"{case:26} {label:24} {counts['registers']:4d} {counts['all']:12d} "
                  f"{floats:6d} {with_constant:11d}{unwritten}")  # fmt: skip
    print("regs: registers a thread; static counts in the sm_90 binary (no NOPs); float: FADD "
          "and FMNMX; with 0/-inf: those reading the zero register or -inf")


def main(argv=None) -> int:
    parser = OneLineParser(prog="row_sum_code", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive_int, default=9,
                        help="interleaved rounds (default 9)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the shuffled order of the rounds (default 0)")
    parser.add_argument("--sass", action="store_true",
                        help="only print each binary's instruction counts (no GPU needed)")
    parser.add_argument("--rewrites", nargs="+", choices=list(REWRITES), default=list(REWRITES),
                        metavar="LABEL", help="the rewrites to time or count (default: all; "
                        f"choices: {', '.join(repr(label) for label in REWRITES)})")
    parser.add_argument("--yours", action="store_true",
                        help="with --sass: count your kernels too (exercises/kernels)")
    parser.add_argument("--output", help="write the rows as JSON here")
    args = parser.parse_args(argv)
    if args.yours and not args.sass:
        parser.error("--yours goes with --sass")
    if args.sass and interpreting():  # the interpreter has no binaries: compile in a child
        environment = {**os.environ, "TRITON_INTERPRET": "0"}
        command = [sys.executable, __file__, "--sass", "--rewrites", *args.rewrites]
        return subprocess.run(command + ["--yours"] * args.yours, env=environment,
                              check=False).returncode  # fmt: skip
    if not args.sass:
        timing.require_gpu("row_sum_code.py")
    with tempfile.TemporaryDirectory() as directory:
        modules = variants(Path(directory), args.rewrites)
        if args.sass:
            if args.yours:
                modules["yours"] = importlib.import_module("exercises.kernels.reductions")
            print_sass(modules)
            return 0
        modules["inductor kernel"] = inductor_kernel(INDUCTOR_LOG, Path(directory))
        ops.numerics_policy()
        print_sass(modules)
        timing.warm_gpu()
        rows = []
        for op, shape, dtype in CASES:
            inputs = ops.get(op).make_inputs(shape, dtype, 0, "cuda")
            calls = case_calls(op, shape, dtype, inputs, modules)
            rows += paired_rows(op, shape, dtype, inputs, calls, args.rounds, args.seed)
    print_table(rows)
    timing.write_json(args.output, {"environment": timing.environment(), "seed": args.seed,
                                    "rows": rows}, script=__file__, argv=argv)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
