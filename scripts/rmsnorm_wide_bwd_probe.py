"""Why did the RMSNorm backward stream at half the ceiling on wide rows? Its variants, timed.
(GPU only; about 1 min)

    python3 scripts/rmsnorm_wide_bwd_probe.py --output results/h200/rmsnorm-wide-bwd-probe.json
    python3 scripts/rmsnorm_wide_bwd_probe.py --profile reference --shape 4096 32768  # ncu

At 4096 x 32768 fp16 the backward alone ran 545 us, 1.97 TB/s, 45% of the streaming ceiling
(``results/h200/rmsnorm-bwd-probe.log``), where it reaches 90% at 16384 x 4096. Wide rows took
the chunked path: one 32-warp program an SM, two passes over each row in 16384-wide chunks
(the second from L2), and a read-modify-write of the program's fp32 partial dweight row for
every row it walks. That design (``CHUNKED_DESIGN``, the module as it was, from its snapshot)
is this probe's ``reference``, and its variants ask which of those costs the time:

* plans (the same kernel, launched differently): narrower chunks with fewer warps, more
  programs an SM, a software-pipelined chunk loop, two rows a step (the partial row updated
  once per two rows), the whole row at once (no second pass; dweight summed in registers);
* rewrites of the chunked path (``scripts/_variants.py``): ``no hints`` drops its
  evict_last / evict_first hints; ``no partial`` drops the partial row's read and write.
  ``no partial`` is a *diagnostic*: its dweight is wrong by design, so it is timed although it
  misses the oracle, to measure what the partial row costs; it is marked so in the table.
  ``partial kept`` marks the partial row's load and store evict_last; ``partial atomic`` adds
  into it with a relaxed ``atomic_add`` (no read back to the SM), ``8 rows`` into one of
  eight shared rows (order-dependent sums: a dweight that changes in its last bits from call
  to call, which the course's checker refuses in a learner's kernel).

``reference again`` is ``reference`` under a second name (the A/A pair); ``wrapper`` is the
landed ``rmsnorm_bwd``, which since these runs holds rows up to 16384 values whole and splits
wider ones into two kernels (the rows' dot products, then 2-D tiles that write dx and sum
dweight in registers; its first runs were this probe's ``split`` variants). Every variant is
checked against the float64 oracle first; one that raises or misses it is listed and left
out. Samples: CUDA-graph replay, interleaved (``rmsnorm_bwd_probe.py``'s table and JSON).

``--profile LABEL --shape M N`` calls one variant (fp16) three times, then once inside a
profiler range, for ``ncu --profile-from-start off``, and times nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
import rmsnorm_bwd_probe as probe  # noqa: E402
from _arguments import shape_argument  # noqa: E402
from _records import OneLineParser, positive_int  # noqa: E402
from _variants import rewritten  # noqa: E402

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402
from reference.kernels import rmsnorm  # noqa: E402

OP = probe.OP
# The backward these variants rewrite: reference/kernels/rmsnorm.py as it was when they were
# timed (the chunked path, one persistent kernel), kept as its record's snapshot. The landed
# module runs the split kernels on these rows; ``wrapper`` times it.
CHUNKED_DESIGN = (Path(__file__).resolve().parents[1] / "results" / "snapshots"
                  / "5a25b019120ca5f3-rmsnorm.py")  # fmt: skip
SHAPES = ((4096, 32768, "float16"), (8192, 16384, "float16"), (2048, 32768, "float32"),
          (4096, 16384, "float32"), (4096, 24576, "float16"))  # the last two: the rule's edges

_CONTINUED = "\n" + " " * 28  # the chunked loops' continuation lines
_NO_HINTS = [
    (_CONTINUED + f'{other}eviction_policy="{policy}")',
     _CONTINUED + f'{other}eviction_policy="")', 1)
    for policy in ("evict_last", "evict_first")
    for other in ("", "other=0.0, ")
] + [
    (" " * 29 + f'eviction_policy="{policy}")', " " * 29 + 'eviction_policy="")', 1)
    for policy in ("evict_last", "evict_first")
]
_PARTIAL = (
    "                partial = tl.load(partial_row + cols, mask=col_mask, other=0.0)\n"
    "                tl.store(partial_row + cols, partial + tl.sum(dy * h_hat, axis=0), "
    "mask=col_mask)\n"
)
_OWNED = ("        # partial_ptr was zero-filled by the launcher: each program owns its row, "
          "no races.\n")
_ATOMIC = ("                tl.atomic_add(partial_row + cols, tl.sum(dy * h_hat, axis=0), "
           "mask=col_mask,\n                              sem=\"relaxed\")\n")  # fmt: skip
REWRITES = {
    "no hints": _NO_HINTS,
    "no partial": [(_PARTIAL, "", 1)],
    "partial kept": [(_PARTIAL, _PARTIAL.replace("other=0.0)", 'other=0.0,\n'
                      '                                  eviction_policy="evict_last")')
                      .replace("mask=col_mask)\n", 'mask=col_mask,\n'
                               '                         eviction_policy="evict_last")\n'), 1)],
    "partial atomic": [(_PARTIAL, _ATOMIC, 1)],
    "partial atomic, 8 rows": [
        (_PARTIAL, _ATOMIC, 1),
        (_OWNED, _OWNED + "        partial_row = partial_ptr + (program % 8) * N\n", 1)],
}
DIAGNOSTIC = {"no partial"}  # wrong by design: timed to measure a cost, never a candidate


@dataclasses.dataclass(frozen=True)
class Variant:
    rewrite: str | None = None  # a REWRITES name, or the reference module
    plan: dict = dataclasses.field(default_factory=dict)  # RowPlan fields replaced
    per_sm: int | None = None  # programs an SM; None: the wrapper's count


VARIANTS = {
    "reference": Variant(),
    "reference again": Variant(),
    "no hints": Variant("no hints"),
    "no partial": Variant("no partial"),
    "block 8192, 16 warps": Variant(plan={"block_cols": 8192, "num_warps": 16}),
    "block 8192, 16 warps, 2/SM": Variant(plan={"block_cols": 8192, "num_warps": 16}, per_sm=2),
    "block 4096, 8 warps, 2/SM": Variant(plan={"block_cols": 4096, "num_warps": 8}, per_sm=2),
    "pipelined chunks": Variant(plan={"num_stages": 2}),
    "block 8192, 16 warps, pipelined": Variant(
        plan={"block_cols": 8192, "num_warps": 16, "num_stages": 2}),
    "rows 2, block 8192": Variant(plan={"rows_per_program": 2, "block_cols": 8192}),
    "rows 2, block 4096, 16 warps": Variant(
        plan={"rows_per_program": 2, "block_cols": 4096, "num_warps": 16}),
    "whole row, 32 warps": Variant(plan={"chunked": False, "block_cols": None}),
    "partial kept in L2": Variant("partial kept"),
    "partial atomic": Variant("partial atomic"),
    "partial atomic, 8 rows": Variant("partial atomic, 8 rows"),
    "rows 2, block 8192, partial kept": Variant(
        "partial kept", plan={"rows_per_program": 2, "block_cols": 8192}),
    "rows 2, block 8192, atomic 8 rows": Variant(
        "partial atomic, 8 rows", plan={"rows_per_program": 2, "block_cols": 8192}),
}
BASELINE = probe.BASELINE


def plan_for(module, variant: Variant, n_rows: int, n_cols: int, element_size: int):
    """``module``'s backward plan with ``variant``'s fields replaced."""
    plan = module.backward_plan(n_rows, n_cols, element_size)
    fields = dict(variant.plan)
    if fields.get("block_cols", 0) is None:  # the whole row in one block
        fields["block_cols"] = 1 << (n_cols - 1).bit_length()
    return dataclasses.replace(plan, **fields)


def launch(module, variant: Variant, dy, x, residual, weight, rstd):
    """``(dx, dweight)``: the wrapper's two launches with this variant's plan and programs."""
    n_rows, n_cols = x.shape
    plan = plan_for(module, variant, n_rows, n_cols, x.element_size())
    blocks = -(-n_rows // plan.rows_per_program)
    if variant.per_sm is None:
        programs = min(blocks, module._persistent_programs(x.device, plan.num_warps))
    else:
        sms = (module.INTERPRETER_SM_COUNT if not torch.cuda.is_available()
               else module._sm_count(x.device.index or 0))  # fmt: skip
        programs = min(blocks, sms * variant.per_sm)
    return probe.launch_backward(module, plan, programs, dy, x, residual, weight, rstd)


def case_calls(found: dict, inputs: dict) -> dict:
    x, residual, weight, eps = (inputs[k] for k in ("x", "residual", "weight", "eps"))
    dy = inputs["grad_output"]
    _, rstd = rmsnorm.rmsnorm_fwd(x, residual, weight, eps, save_rstd=True)

    def call(variant):
        def run():
            dx, dweight = launch(found[variant.rewrite], variant, dy, x, residual, weight, rstd)
            return dx, dx, dweight

        return run

    calls = {label: call(variant) for label, variant in VARIANTS.items()}

    def wrapper():
        dx, dweight = rmsnorm.rmsnorm_bwd(dy, x, residual, weight, rstd)
        return dx, dx, dweight

    calls["wrapper"] = wrapper
    return calls


def modules(directory: Path) -> dict:
    """``{rewrite name: module}``, and ``None``: the chunked design these variants rewrite,
    imported from its snapshot."""
    chunked = SimpleNamespace(__file__=str(CHUNKED_DESIGN), __name__=rmsnorm.__name__)
    found = {None: rewritten(chunked, [], directory, "rmsnorm_wide_bwd_chunked")}
    for name, rewrites in REWRITES.items():
        found[name] = rewritten(chunked, rewrites, directory,
                                f"rmsnorm_wide_bwd_{name.replace(' ', '_')}")  # fmt: skip
    return found


def profile(found: dict, label: str, shape: tuple[int, int]) -> int:
    spec = ops.get(OP)
    inputs = spec.inputs(shape, torch.float16, 0, "cuda")
    call = case_calls(found, inputs)[label]
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    call()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print(f"profiled {label} at {spec.shape_label(shape)} float16 (one call: two kernels)")
    return 0


def parse_args(argv=None) -> argparse.Namespace:
    parser = OneLineParser(prog="rmsnorm_wide_bwd_probe", description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", nargs="+", type=shape_argument, default=None,
                        metavar="ROWSxCOLS", help="fp16 shapes (default: 4096x32768, "
                        "8192x16384 and 4096x24576 fp16, 2048x32768 and 4096x16384 fp32)")
    parser.add_argument("--rounds", type=positive_int, default=7,
                        help="interleaved rounds (default 7)")
    parser.add_argument("--profile", choices=[*VARIANTS, "wrapper"],
                        help="call this variant once inside a profiler range (for ncu)")
    parser.add_argument("--shape", type=positive_int, nargs=2, metavar=("M", "N"),
                        help="with --profile: the tensor's rows and columns (fp16)")
    parser.add_argument("--output", help="write the JSON record here")
    args = parser.parse_args(argv)
    if (args.profile is None) != (args.shape is None):
        parser.error("--profile and --shape go together")
    if args.profile and args.shapes:
        parser.error("--shapes times; --profile profiles one --shape: one or the other")
    if args.shapes:
        args.cases = [(m, n, "float16") for m, n in dict.fromkeys(args.shapes)]
    else:
        args.cases = list(SHAPES)
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    timing.require_gpu("rmsnorm_wide_bwd_probe.py")
    ops.numerics_policy()
    spec = ops.get(OP)
    records = []
    with tempfile.TemporaryDirectory() as directory:  # Triton reads a kernel's source file
        found = modules(Path(directory))
        if args.profile:
            return profile(found, args.profile, tuple(args.shape))
        timing.warm_gpu()
        for m, n, name in args.cases:
            dtype = ops.dtype_from_name(name)
            inputs = spec.inputs((m, n), dtype, 0, "cuda")
            calls = case_calls(found, inputs)
            failed = probe.checked(spec, calls, inputs, dtype)
            if BASELINE in failed:
                raise SystemExit(f"rmsnorm_wide_bwd_probe.py: {m}x{n} {name} {BASELINE} "
                                 f"fails: {failed[BASELINE]}")  # fmt: skip
            for label in DIAGNOSTIC & failed.keys():
                if not failed[label].startswith("raised"):
                    failed.pop(label)  # timed: it misses the oracle by design
            timing.warm_gpu()
            timed = {label: call for label, call in calls.items() if label not in failed}
            samples = timing.interleaved_graph_samples(timed, rounds=args.rounds)
            logical = 4 * m * n * dtype.itemsize
            records.append({"shape": f"{m}x{n}", "dtype": name, "logical_bytes": logical,
                            "failed": failed, "diagnostic": sorted(DIAGNOSTIC),
                            "variants": probe.summarize(samples, logical)})  # fmt: skip
    lines = probe.table_lines(records)
    lines.append("")
    lines.append(f"diagnostic (dweight wrong by design, timed to measure a cost): "
                 f"{', '.join(sorted(DIAGNOSTIC))}")  # fmt: skip
    print("\n".join(lines))
    timing.write_json(args.output, {"environment": timing.environment(), "rounds": args.rounds,
                                    "cases": records}, script=__file__, argv=argv)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
