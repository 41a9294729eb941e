"""Where does the RMSNorm backward lose to the DRAM ceiling? Its variants, timed interleaved.
(GPU only; about 1 min)

    python3 scripts/rmsnorm_bwd_probe.py --output results/h200/rmsnorm-bwd-probe.json

The residual RMSNorm training step (`rmsnorm_train`) is 1.23x torch.compile at 16384 x 4096
fp16, where the DRAM allows at most 1.30x (results/NOTES.md). Its forward streams at the
ceiling (4.33 TB/s); its backward, which reads dy, x and residual and writes dx (four passes
of the tensor), ran 0.137 ms, 3.93 TB/s, 91% of it (`row-chunk-rmsnorm-bwd.log`). The
backward is persistent: two 8-warp programs an SM walk the rows, each loading its three rows,
reducing across the row, then storing, with nothing else in flight while it reduces.

Each variant below is the reference module (``reference/kernels/rmsnorm.py``) with a few
lines of its whole-row backward rewritten (``REWRITES``, applied by ``scripts/_variants.py``:
a rewrite that no longer matches stops the probe), or launched with more programs:

* ``prefetch``: the row loop software-pipelined (``tl.range(..., num_stages=2)``), so that the
  next row block's loads are issued before this one's reduction;
* ``w narrow``: the weight kept in its own dtype and widened where it is used (fewer
  registers a thread for the whole loop);
* ``evict first``: the three row loads marked ``evict_first`` (each row is read once);
* ``programs xK``: K times the programs an SM (more rows in flight; more partial rows for the
  dweight sum);
* ``prefetch + evict first``.

``reference`` is the same launch as the wrapper's, through this script's launcher, and
``reference again`` the same call under a second name (the A/A pair: a difference between
variants smaller than the pair's is not a result); ``wrapper`` is ``rmsnorm_bwd`` itself.
Every variant's dx and dweight are checked against the float64 oracle of the training op
before anything is timed; one that raises (a compile error, out of resources) or misses the
oracle is listed with the reason and left out of the timing, and the run stops only if the
reference itself fails. Samples: CUDA-graph replay, every graph captured first, shuffled
rounds (``_gpu_timing.interleaved_graph_samples``); per variant the median, the paired ratio
against ``reference`` (the median over rounds of reference / variant, above 1 faster) and the
rounds it lost.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
from _arguments import shape_argument  # noqa: E402
from _records import OneLineParser, positive_int  # noqa: E402
from _variants import rewritten  # noqa: E402

# isort: split
import torch  # noqa: E402
import triton  # noqa: E402

from learning import ops  # noqa: E402
from learning.report.stats import paired  # noqa: E402
from reference.kernels import rmsnorm  # noqa: E402

OP = "rmsnorm_train"
DTYPES = ("float16",)

_LOOP = ("    dw_acc = tl.zeros((ROWS, BLOCK), dtype=tl.float32)\n"
         "    for row_block in range(program, n_row_blocks, n_programs):\n")  # fmt: skip
_PREFETCH = (_LOOP, _LOOP.replace("in range(program, n_row_blocks, n_programs)",
                                  "in tl.range(program, n_row_blocks, n_programs, num_stages=2)"),
             1)  # fmt: skip
_BODY, _IN_LOOP = " " * 4, " " * 8  # the indentation of the kernel's body and of its row loop
_W_LOAD = (_BODY + "w = tl.load(weight_ptr + cols, mask=col_mask, other=0.0)"
           ".to(tl.float32)[None, :]\n" + _BODY + "dw_acc = tl.zeros((ROWS, BLOCK)")  # fmt: skip
_W_NARROW = [
    (_W_LOAD, _W_LOAD.replace(".to(tl.float32)[None, :]", "[None, :]"), 1),
    (_IN_LOOP + "g = dy * w\n", _IN_LOOP + "g = dy * w.to(tl.float32)\n", 1),
]
_EVICT = ', eviction_policy="evict_first")'
_X_LOAD = (_IN_LOOP + "x = tl.load(x_ptr + rows64 * x_row_stride + cols[None, :], mask=mask, "
           "other=0.0)")  # fmt: skip
_R_LOAD = (_IN_LOOP + "r = tl.load(residual_ptr + rows64 * residual_row_stride + cols[None, :], "
           "mask=mask,\n" + _IN_LOOP + "            other=0.0)")  # fmt: skip
_DY_LOAD = _IN_LOOP + "dy = tl.load(dy_ptr + rows64 * N + cols[None, :], mask=mask, other=0.0)"
# The three row loads read the same in the whole-row kernel and the split backward's tiles
# kernel: the hint goes on both (2 of each), and only the kernel a shape takes runs.
_EVICT_FIRST = [
    (_X_LOAD + "\n", _X_LOAD[:-1] + _EVICT + "\n", 2),
    (_R_LOAD + "\n", _R_LOAD[:-1] + _EVICT + "\n", 2),
    (_DY_LOAD + ".to(tl.float32)\n", _DY_LOAD[:-1] + _EVICT + ".to(tl.float32)\n", 2),
]
REWRITES = {
    "prefetch": [_PREFETCH],
    "w narrow": _W_NARROW,
    "evict first": _EVICT_FIRST,
    "prefetch + evict first": [_PREFETCH, *_EVICT_FIRST],
}
# label -> (rewrite name or None for the reference module, programs-an-SM factor)
VARIANTS = {
    "reference": (None, 1),
    "reference again": (None, 1),
    "prefetch": ("prefetch", 1),
    "w narrow": ("w narrow", 1),
    "evict first": ("evict first", 1),
    "programs x2": (None, 2),
    "programs x4": (None, 4),
    "prefetch + evict first": ("prefetch + evict first", 1),
}
BASELINE = "reference"


def modules(directory: Path) -> dict:
    """``{rewrite name: module}`` for every rewrite, and ``None``: the reference module."""
    found = {None: rmsnorm}
    for name, rewrites in REWRITES.items():
        found[name] = rewritten(rmsnorm, rewrites, directory,
                                f"rmsnorm_bwd_{name.replace(' ', '_').replace('+', 'and')}")
    return found


def n_programs(module, plan, n_rows: int, device: torch.device, factor: int) -> int:
    """The wrapper's count of persistent programs, times ``factor`` programs an SM."""
    blocks = -(-n_rows // plan.rows_per_program)
    if factor == 1:
        return min(blocks, module._persistent_programs(device, plan.num_warps))
    per_sm = max(1, module.RESIDENT_WARPS_PER_SM * factor // plan.num_warps)
    sms = (module.INTERPRETER_SM_COUNT if not torch.cuda.is_available()
           else module._sm_count(device.index or 0))  # fmt: skip
    return min(blocks, sms * per_sm)


def _jit(kernel):
    """The ``JITFunction`` under a kernel (the interpreter wraps it once more)."""
    return getattr(kernel, "fn", kernel) if not hasattr(kernel, "arg_names") else kernel


def backward(module, dy, x, residual, weight, rstd, factor: int = 1):
    """``(dx, dweight)``: the wrapper's two launches (the row kernel, then the dweight sum),
    with the rows walked by ``factor`` times the programs an SM."""
    n_rows, n_cols = x.shape
    plan = module.backward_plan(n_rows, n_cols, x.element_size())
    programs = n_programs(module, plan, n_rows, x.device, factor)
    return launch_backward(module, plan, programs, dy, x, residual, weight, rstd)


def launch_backward(module, plan, programs: int, dy, x, residual, weight, rstd):
    """``(dx, dweight)``: ``module``'s row kernel with ``plan`` over ``programs`` persistent
    programs, then its dweight sum, as ``rmsnorm_bwd`` launches them."""
    n_rows, n_cols = x.shape
    dx = torch.empty_like(x)
    dweight = torch.empty_like(weight)
    allocate = torch.zeros if plan.chunked else torch.empty
    partials = allocate((programs, n_cols), dtype=torch.float32, device=x.device)
    kernel = module._rmsnorm_bwd_kernel
    # the chunked path's switches, in the versions of the module that had one in this kernel
    chunked = ({"CHUNKED": plan.chunked, "NUM_STAGES": plan.num_stages}
               if "CHUNKED" in _jit(kernel).arg_names else {})  # fmt: skip
    kernel[(programs,)](
        dy, x, residual, weight, rstd, dx, partials, n_rows, x.stride(0), residual.stride(0),
        N=n_cols, BLOCK=plan.block_cols, ROWS=plan.rows_per_program, num_warps=plan.num_warps,
        **chunked,
    )  # fmt: skip
    module._rmsnorm_dweight_kernel[(triton.cdiv(n_cols, module.DWEIGHT_COLUMNS),)](
        partials, dweight, programs, N=n_cols, BLOCK=module.DWEIGHT_COLUMNS,
        PARTIALS=module.DWEIGHT_PARTIALS, num_warps=4,
    )  # fmt: skip
    return dx, dweight


def case_calls(found: dict, inputs: dict) -> dict:
    """``{label: call}``: each variant's backward for these inputs, returning what the training
    op's oracle checks (dx for x and for residual, dweight), and ``wrapper``."""
    x, residual, weight, eps = (inputs[k] for k in ("x", "residual", "weight", "eps"))
    dy = inputs["grad_output"]
    _, rstd = rmsnorm.rmsnorm_fwd(x, residual, weight, eps, save_rstd=True)

    def call(module, factor):
        def run():
            dx, dweight = backward(module, dy, x, residual, weight, rstd, factor)
            return dx, dx, dweight

        return run

    calls = {label: call(found[name], factor) for label, (name, factor) in VARIANTS.items()}

    def wrapper():
        dx, dweight = rmsnorm.rmsnorm_bwd(dy, x, residual, weight, rstd)
        return dx, dx, dweight

    calls["wrapper"] = wrapper
    return calls


def checked(spec, calls: dict, inputs: dict, dtype) -> dict[str, str]:
    """``{label: why}`` for every call that raises or misses the float64 oracle (one line
    each); those are left out of the timing, and the rest are timed."""
    failed = {}
    for label, call in calls.items():
        try:
            outputs = call()
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            why = timing.oracle_check(spec, outputs, inputs, dtype)
        except Exception as error:  # out of resources, a compile error
            why = f"raised {type(error).__name__}: {str(error).strip()[:200]}"
        if why:
            failed[label] = " ".join(why.split())
    return failed


def summarize(samples: dict[str, list[float]], logical_bytes: int) -> list[dict]:
    base = samples[BASELINE]
    rows = []
    for label, values in samples.items():
        median = statistics.median(values)
        pair = None if label == BASELINE else paired({"samples_ms": values},
                                                     {"samples_ms": base})  # fmt: skip
        rows.append({"variant": label, "median_us": median * 1e3, "min_us": min(values) * 1e3,
                     "max_us": max(values) * 1e3, "samples_us": [v * 1e3 for v in values],
                     "tbps": logical_bytes / (median * 1e-3) / 1e12,
                     "paired_vs_reference": pair})  # fmt: skip
    return rows


def table_lines(records: list[dict]) -> list[str]:
    lines = ["the backward alone (row kernel + dweight sum), warm, graph replay; paired: the "
             "median over rounds of reference / variant (above 1: faster); lost: rounds slower"]
    for record in records:
        lines += ["", f"{OP} {record['shape']} {record['dtype']}  (four passes: "
                      f"{record['logical_bytes'] / 1e6:.0f} MB)",
                  f"  {'variant':24} {'median us':>9} {'min-max us':>17} {'TB/s':>5} "
                  f"{'paired':>7} {'lost':>6}"]  # fmt: skip
        for row in sorted(record["variants"], key=lambda r: r["median_us"]):
            pair = row["paired_vs_reference"]
            spread = f"{row['min_us']:.2f}-{row['max_us']:.2f}"
            ratio = f"{pair['paired_ratio']:.3f}" if pair else "-"
            lost = f"{pair['slower']}/{pair['rounds']}" if pair else "-"
            lines.append(f"  {row['variant']:24} {row['median_us']:9.2f} {spread:>17} "
                         f"{row['tbps']:5.2f} {ratio:>7} {lost:>6}")  # fmt: skip
        for label, why in record.get("failed", {}).items():
            lines.append(f"  {label:24} not timed: {why}")
    return lines



def parse_args(argv=None) -> argparse.Namespace:
    spec = ops.get(OP)
    default_shapes = [f"{m}x{n}" for m, n in spec.default_shapes]
    parser = OneLineParser(prog="rmsnorm_bwd_probe", description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", nargs="+", type=shape_argument, default=None,
                        metavar="ROWSxCOLS", help=f"default: {' '.join(default_shapes)}")
    parser.add_argument("--dtypes", nargs="+", default=list(DTYPES),
                        choices=[ops.dtype_name(d) for d in spec.dtypes],
                        help=f"default {' '.join(DTYPES)}")
    parser.add_argument("--rounds", type=positive_int, default=7,
                        help="interleaved rounds (default 7)")
    parser.add_argument("--output", help="write the JSON record here")
    args = parser.parse_args(argv)
    args.shapes = list(dict.fromkeys(args.shapes or spec.default_shapes))
    args.dtypes = list(dict.fromkeys(args.dtypes))
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    timing.require_gpu("rmsnorm_bwd_probe.py")
    ops.numerics_policy()
    timing.warm_gpu()
    spec = ops.get(OP)
    records = []
    with tempfile.TemporaryDirectory() as directory:  # Triton reads a kernel's source file
        found = modules(Path(directory))
        for shape in args.shapes:
            for name in args.dtypes:
                dtype = ops.dtype_from_name(name)
                inputs = spec.inputs(shape, dtype, 0, "cuda")
                calls = case_calls(found, inputs)
                failed = checked(spec, calls, inputs, dtype)
                if BASELINE in failed:
                    raise SystemExit(f"rmsnorm_bwd_probe.py: {spec.shape_label(shape)} {name} "
                                     f"{BASELINE} fails: {failed[BASELINE]}")  # fmt: skip
                timing.warm_gpu()
                timed = {label: call for label, call in calls.items() if label not in failed}
                samples = timing.interleaved_graph_samples(timed, rounds=args.rounds)
                logical = 4 * shape[0] * shape[1] * dtype.itemsize
                records.append({"shape": spec.shape_label(shape), "dtype": name,
                                "logical_bytes": logical, "failed": failed,
                                "variants": summarize(samples, logical)})  # fmt: skip
    print("\n".join(table_lines(records)))
    timing.write_json(args.output, {"environment": timing.environment(), "rounds": args.rounds,
                                    "cases": records}, script=__file__, argv=argv)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
