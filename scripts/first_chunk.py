"""Does a row reduction that starts from its first chunk close the last fp32 gap? (GPU, ~2 min)

    python3 scripts/first_chunk.py --output results/h200/first-chunk.json
    python3 scripts/first_chunk.py --sass       # the instruction counts only; no GPU needed

Paired by round, torch.compile's fp32 row sum at 16384 x 4096 beats the reference by 0.2-0.6%
in 13-14 of 15 rounds (``results/NOTES.md``). Every launch plan reads the same
(``streaming-plans.log``), and Nsight Compute counts 11% more instructions in the reference
(``ncu-fp32-sum-16384x4096-*.log``: 72 a warp against Inductor's 64). Compiled for the H200
(sm_90), the reference's binary adds each loaded value to the zeros its accumulator starts
from: ``x + 0.0`` is not ``x`` when ``x`` is -0.0, so the compiler must keep every one of
those adds (``FADD R, RZ, R``), eight a thread where the row is one 16 KiB block. The max
has the same start, ``maximum(-inf, x)``. Inductor's loop also starts from zeros, but its
2048-wide steps leave four such adds a thread, not eight.

The variant here starts the accumulator from the first chunk instead (``acc = load(first
chunk)``, then the loop from the second), so the zeros and the adds disappear. It also tries
that start with int32 row offsets (right only while a tensor has fewer than 2**31 elements,
as every case here does: a probe, not a rule), since int64 offsets make the other difference
in the binary's address arithmetic.

``--sass`` compiles every variant for sm_90 (Triton's own ``ptxas`` and ``cuobjdump``; no GPU)
and prints each binary's instructions: all of them, the floating-point adds and min/max, and
those adding or comparing against zero or -inf. The timing times, for each case, the
reference twice (an A/A pair), each variant and torch.compile (``dynamic=False``), all
checked against the float64 oracle first, interleaved with every graph captured first, and
prints the ratio of medians and the paired ratio against compile with the rounds lost and a
sign test (``streaming_variants.paired_rows``).
"""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
from _records import OneLineParser, positive_int  # noqa: E402
from _variants import rewritten  # noqa: E402
from streaming_variants import paired_rows, print_table  # noqa: E402

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402
from learning.bench.variants import fresh_compiled  # noqa: E402
from learning.runtime import interpreting  # noqa: E402
from reference.kernels import reductions  # noqa: E402
from reference.kernels.row_plan import choose_row_plan  # noqa: E402

CASES = (("sum", (16384, 4096), torch.float32), ("max", (16384, 4096), torch.float32),
         ("sum", (4096, 32768), torch.float32), ("sum", (65536, 128), torch.float32),
         ("sum", (16384, 4096), torch.float16), ("max", (16384, 4096), torch.bfloat16),
         ("sum", (4096, 32768), torch.bfloat16))  # fmt: skip
KERNELS = {"sum": ("_row_sum_kernel", "row_sum"), "max": ("_row_max_kernel", "row_max")}

_LOOP = "    for col_start in tl.range(0, N, BLOCK, num_stages=NUM_STAGES):"
_FIRST = ("    cols = tl.arange(0, BLOCK)\n    acc = tl.load(row_start + cols[None, :], "
          "mask=(cols < N)[None, :], other={other}).to(tl.float32)\n"
          "    for col_start in tl.range(BLOCK, N, BLOCK, num_stages=NUM_STAGES):")  # fmt: skip
FIRST_CHUNK = [
    (f"    acc = tl.zeros((ROWS, BLOCK), dtype=tl.float32)\n{_LOOP}", _FIRST.format(other="0.0"), 1),
    (f'    acc = tl.full((ROWS, BLOCK), float("-inf"), dtype=tl.float32)\n{_LOOP}',
     _FIRST.format(other='float("-inf")'), 1),
]  # fmt: skip
INT32 = [("tl.minimum(rows, n_rows - 1).to(tl.int64)[:, None]",
          "tl.minimum(rows, n_rows - 1)[:, None]", 2)]  # fmt: skip
POINTER_TYPES = {torch.float32: "*fp32", torch.float16: "*fp16", torch.bfloat16: "*bf16"}


def variants(directory: Path) -> dict[str, object]:
    """The reductions module as the reference has it and rewritten: {label: module}."""
    return {
        "first chunk": rewritten(reductions, FIRST_CHUNK, directory, "reductions_first_chunk"),
        "first chunk+int32": rewritten(reductions, FIRST_CHUNK + INT32, directory,
                                       "reductions_first_chunk_int32"),
    }  # fmt: skip


def case_calls(op: str, inputs: dict, modules: dict) -> dict[str, object]:
    """The reference twice, each variant and compile, as zero-argument calls."""
    spec = ops.get(op)
    (x,) = inputs.values()
    reference = spec.kernel_function("reference")
    calls = {"reference": lambda: reference(x), "reference again": lambda: reference(x)}
    for label, module in modules.items():
        calls[label] = lambda f=getattr(module, KERNELS[op][1]): f(x)
    compiled = fresh_compiled(next(iter(spec.baselines.values())))
    calls["compile"] = lambda: compiled(x)
    return calls


def sass_counts(module, op: str, shape, dtype) -> collections.Counter:
    """Compile ``module``'s kernel for ``op`` at ``shape`` for sm_90 and count its instructions:
    ``all``, ``float`` (FADD, FMNMX) and ``float with a constant`` (those reading RZ, the zero
    register, or -inf), each by opcode name too. Needs kernels compiled, not interpreted."""
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
    with tempfile.TemporaryDirectory() as directory:
        cubin = Path(directory) / "kernel.cubin"
        cubin.write_bytes(binary.asm["cubin"])
        listing = subprocess.run([triton.knobs.nvidia.cuobjdump.path, "-sass", str(cubin)],
                                 capture_output=True, text=True, check=True).stdout  # fmt: skip
    counts = collections.Counter()
    for line in listing.splitlines():
        match = re.match(r"\s+/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)([^;]*);", line)
        if not match or match.group(1) == "NOP":
            continue
        opcode, operands = match.group(1).split(".")[0], match.group(2)
        counts["all"] += 1
        if opcode in ("FADD", "FMNMX"):
            counts["float"] += 1
            if re.search(r"\bRZ\b|-INF", operands):
                counts["float with a constant"] += 1
    return counts


def print_sass(modules: dict) -> None:
    print(f"{'case':26} {'kernel':20} {'instructions':>12} {'float':>6} {'with 0/-inf':>11}")
    for op, shape, dtype in CASES:
        case = f"{op} {shape[0]}x{shape[1]} {str(dtype).removeprefix('torch.')}"
        for label, module in {"reference": reductions, **modules}.items():
            counts = sass_counts(module, op, shape, dtype)
            print(f"{case:26} {label:20} {counts['all']:12d} {counts['float']:6d} "
                  f"{counts['float with a constant']:11d}")  # fmt: skip
    print("static counts in the sm_90 binary (no NOPs); float: FADD and FMNMX; with 0/-inf: "
          "those reading the zero register or -inf")


def main(argv=None) -> int:
    parser = OneLineParser(prog="first_chunk", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive_int, default=9,
                        help="interleaved rounds (default 9)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the shuffled order of the rounds (default 0)")
    parser.add_argument("--sass", action="store_true",
                        help="only print each binary's instruction counts (no GPU needed)")
    parser.add_argument("--output", help="write the rows as JSON here")
    args = parser.parse_args(argv)
    if args.sass and interpreting():  # the interpreter has no binaries: compile in a child
        environment = {**os.environ, "TRITON_INTERPRET": "0"}
        command = [sys.executable, __file__, "--sass"]
        return subprocess.run(command, env=environment, check=False).returncode
    with tempfile.TemporaryDirectory() as directory:
        modules = variants(Path(directory))
        if args.sass:
            print_sass(modules)
            return 0
        timing.require_gpu("first_chunk.py")
        ops.numerics_policy()
        print_sass(modules)
        timing.warm_gpu()
        rows = []
        for op, shape, dtype in CASES:
            inputs = ops.get(op).make_inputs(shape, dtype, 0, "cuda")
            rows += paired_rows(op, shape, dtype, inputs, case_calls(op, inputs, modules),
                                args.rounds, args.seed)  # fmt: skip
    print_table(rows)
    timing.write_json(args.output, {"environment": timing.environment(), "seed": args.seed,
                                    "rows": rows}, script=__file__, argv=argv)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
