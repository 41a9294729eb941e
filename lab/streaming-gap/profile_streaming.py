"""Launch one variant of a forward op, once inside a profiler range, for Nsight Compute (GPU only).

    ncu --clock-control none --profile-from-start off --csv --metrics ... \\
        python3 lab/streaming-gap/profile_streaming.py --op add --shape 16384x4096 \\
        --dtype float32 --variant compile

The variants are the two kernel-bench compares in the every-case sweep: ``reference`` (the
reference kernel through its public wrapper) and ``compile`` (the op's first PyTorch
baseline under ``torch.compile(dynamic=False)``, built as kernel-bench builds it), and
``plan``: the reference with one of the launch plans ``streaming_plans.py`` times, named by
its label there (``--plan "chunk 4096 w32"`` for the row sum or max, ``--plan "block 1024
w8"`` for the add; the rule's own plan is listed too); and ``rewritten``: the reference with
one of the probes' source rewrites, named with ``--rewrite`` (:data:`REWRITES`: the row
reductions as they were before ``row_sum_code.py``'s change, the add with ``evict_first``
loads as ``streaming_variants.py`` times it, the RMSNorm forward with its eviction rule
forced as ``rmsnorm_evict.py`` times it). The script
calls the variant a few times outside any profiler range (the first call compiles; Inductor
also benchmarks its own candidates then), then once between ``cudaProfilerStart`` and
``cudaProfilerStop``, so ``--profile-from-start off`` profiles that call's kernels and
nothing else. Inputs come from the registry (seed 0). ``TORCH_LOGS=output_code`` in the
environment prints the Triton code Inductor wrote for the ``compile`` variant.
``lab/streaming-gap/run.sh streaming-fp32`` runs it for the fp32 streaming cases that
torch.compile wins by under 1% (``results/NOTES.md``), ``plans-ncu`` for the plans that won
and lost in ``streaming-plans.log``, ``evict-ncu`` the eviction hint's three kernels with and
without it (``--cache-control none`` there, so the profiled call meets the L2 as the calls
before it left it, as in graph replay).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))  # the shared helpers

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
from _arguments import forward_ops, parse_shape  # noqa: E402
from _records import OneLineParser  # noqa: E402
from _variants import REDUCTIONS_BEFORE, rewritten  # noqa: E402
from rmsnorm_evict import REWRITES as RMSNORM_REWRITES  # noqa: E402
from streaming_plans import add_blocks, reduction_plans  # noqa: E402
from streaming_variants import _ADD_EVICT_FIRST  # noqa: E402

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402
from learning.bench.variants import fresh_compiled  # noqa: E402
from reference.kernels import add, reductions, rmsnorm  # noqa: E402

WARM_CALLS = 3
VARIANTS = ("reference", "compile", "plan", "rewritten")
PLAN_OPS = ("add", "sum", "max")
# label: (op, module, its rewrites, the function to call)
REWRITES = {
    "sum before": ("sum", reductions, REDUCTIONS_BEFORE, "row_sum"),
    "max before": ("max", reductions, REDUCTIONS_BEFORE, "row_max"),
    "add evict_first": ("add", add, _ADD_EVICT_FIRST, "add"),
    "rmsnorm hint always": ("rmsnorm", rmsnorm, RMSNORM_REWRITES["hint always"], "rmsnorm"),
    "rmsnorm hint never": ("rmsnorm", rmsnorm, RMSNORM_REWRITES["hint never"], "rmsnorm"),
}


def plan_function(op: str, shape: tuple[int, ...], element_size: int, label: str):
    """The reference ``op`` launched with the plan ``streaming_plans.py`` labels ``label``
    for this shape and element size; ValueError (naming the labels) for an unknown one."""
    if op == "add":
        candidates = add_blocks(shape[0] * shape[1], element_size)
    else:
        candidates = reduction_plans(shape[1], element_size)
    plans = {name.removeprefix("rule [").removesuffix("]"): plan
             for name, plan in candidates.items()}  # fmt: skip
    if label not in plans:
        raise ValueError(f"no plan {label!r} for {op} here; one of: {', '.join(plans)}")
    if op == "add":
        block, warps = plans[label]
        return lambda x, y: add.add_fwd(x, y, block=block, num_warps=warps)
    reduce = reductions.row_sum if op == "sum" else reductions.row_max
    return lambda x: reduce(x, plans[label])


def variant_function(spec: ops.OpSpec, variant: str):
    if variant == "reference":
        return spec.kernel_function("reference")
    return fresh_compiled(next(iter(spec.baselines.values())))


def main(argv=None) -> int:
    parser = OneLineParser(prog="profile_streaming", description=__doc__.splitlines()[0])
    parser.add_argument("--op", choices=forward_ops(), required=True)
    parser.add_argument("--shape", required=True, help="ROWSxCOLS, e.g. 16384x4096")
    parser.add_argument("--dtype", choices=("float16", "bfloat16", "float32"), required=True)
    parser.add_argument("--variant", choices=VARIANTS, required=True)
    parser.add_argument("--plan", help="with --variant plan: the plan's label in "
                        "streaming_plans.py, e.g. 'chunk 4096 w32' or 'block 1024 w8'")
    parser.add_argument("--rewrite", choices=list(REWRITES),
                        help="with --variant rewritten: which rewrite of the reference")
    args = parser.parse_args(argv)
    spec = ops.get(args.op)
    try:
        shape = parse_shape(spec, args.shape)
    except ValueError as error:
        parser.error(f"--shape: {error}")
    dtype = ops.dtype_from_name(args.dtype)
    if (args.variant == "plan") != (args.plan is not None):
        parser.error("--plan goes with --variant plan, and --variant plan needs --plan")
    if (args.variant == "rewritten") != (args.rewrite is not None):
        parser.error("--rewrite goes with --variant rewritten, which needs --rewrite")
    if args.rewrite and REWRITES[args.rewrite][0] != args.op:
        parser.error(f"--rewrite {args.rewrite!r} rewrites {REWRITES[args.rewrite][0]}, "
                     f"not {args.op}")
    if args.variant == "plan":
        if args.op not in PLAN_OPS:
            parser.error(f"--variant plan: only for {', '.join(PLAN_OPS)}, not {args.op}")
        try:
            fn = plan_function(args.op, shape, dtype.itemsize, args.plan)
        except ValueError as error:
            parser.error(f"--plan: {error}")
    timing.require_gpu("profile_streaming.py")
    ops.numerics_policy()
    inputs = spec.make_inputs(shape, dtype, 0, "cuda")
    directory = tempfile.TemporaryDirectory()  # the rewritten module's file, while it runs
    if args.variant == "rewritten":
        _, module, rewrites, name = REWRITES[args.rewrite]
        fn = getattr(rewritten(module, rewrites, Path(directory.name), "profiled"), name)
    elif args.variant != "plan":
        fn = variant_function(spec, args.variant)
    for _ in range(WARM_CALLS):
        fn(*inputs.values())
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    fn(*inputs.values())
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    directory.cleanup()
    which = (f"plan {args.plan!r}" if args.plan else
             f"rewrite {args.rewrite!r}" if args.rewrite else args.variant)  # fmt: skip
    print(f"profiled one call of the {which} {args.op} {spec.shape_label(shape)} "
          f"{args.dtype} (after {WARM_CALLS} unprofiled calls)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
