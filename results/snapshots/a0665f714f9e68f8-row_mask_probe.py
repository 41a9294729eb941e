"""Does an always-true row mask slow a DRAM-bound kernel, or where its buffers sit? (GPU, ~4 min)

    python3 scripts/row_mask_probe.py --output results/h200/row-mask-probe.json

Two probes of the RMSNorm forward's row mask (``rmsnorm-row-mask-probe*.log``) dropped it at
4096 x 32768 and saw fp32 gain 1%, fp16 gain 4-5% and bf16 lose 3%, although the SASS of
the two 16-bit kernels differs only in their conversions. The forward now takes the mask as
a compile-time switch (``MASK_ROWS``; the wrapper's rule is ``rmsnorm._mask_rows``). This
script asks four questions, each timed interleaved under CUDA-graph replay, every kernel
writing into a buffer allocated once (so that its
output, too, stays where it is). The RMSNorm versions: ``row mask`` and ``no row mask`` (the
switch set either way), ``rows clamped`` (rows past the end reread the last row, as in the
softmax, so that the loads are masked by column only, and only the store by row), and, in
``cases``, the ``reference`` (the wrapper's rule).

* ``placement``: four buffer sets (x, residual, y) at 4096 x 32768, shifted against each other
  by spacer allocations; on each set the 16-bit kernels run on the *same* bytes, fp16 and
  bf16 (a view), filled so that both read as finite values. Does the time follow the dtype,
  the kernel, or the set? (torch.compile's kernel allocates its own output.)
* ``cases``: the RMSNorm forward at every default shape and dtype of the registry, next to
  torch.compile of the composition (compiled per case, ``dynamic=False``). ``no row mask``
  is left out where the row count is not a multiple of the plan's rows (the last program
  would read and write past the end).
* ``registers``: the 16-bit one-chunk plans (4096 x 32768, 8192 x 16384), each version also
  with its registers capped at 32 a thread (``maxnreg``), the most at which two of its
  1024-thread programs fit one SM.
* ``softmax``: the softmax forward with one row a program, with and without the row mask of
  its store, at 16384 x 4096 and 4096 x 32768 in fp16 and bf16.

The variants are the reference source with a few lines rewritten (``REWRITES``, applied by
``scripts/_variants.py``); each rewrite must match, so a reference that changes under this
script stops it rather than timing the wrong kernel. Every variant's output is checked
against the float64 oracle before anything is timed.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
from _records import REPO_ROOT, OneLineParser, positive_int  # noqa: E402
from _variants import rewritten  # noqa: E402

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402
from reference.kernels import rmsnorm, softmax  # noqa: E402

PLACEMENT_SHAPE = (4096, 32768)
SPACERS_MIB = (0, 2, 10, 34)  # allocated before each buffer set, and kept: four placements
SOFTMAX_SHAPES = ((16384, 4096), (4096, 32768))
REGISTER_SHAPES = ((4096, 32768), (8192, 16384))  # the RMSNorm forward's one-chunk plans
SIXTEEN_BIT = (torch.float16, torch.bfloat16)

# (old text, new text, how many times it must occur) for each variant of each module
REWRITES = {
    # rows past the end reread the last row, as in the softmax: loads masked by column only
    ("rmsnorm", "rows clamped"): (
        ("    rows64 = rows.to(tl.int64)[:, None]\n    x_row = x_ptr + rows64 * x_row_stride\n"
         "    r_row = residual_ptr + rows64 * residual_row_stride\n",
         "    read_rows = tl.minimum(rows, n_rows - 1).to(tl.int64)[:, None]\n"
         "    rows64 = rows.to(tl.int64)[:, None]\n    x_row = x_ptr + read_rows * x_row_stride\n"
         "    r_row = residual_ptr + read_rows * residual_row_stride\n", 1),
        ("(row_mask[:, None] if MASK_ROWS else True) & (cols < N)[None, :]",
         "(cols < N)[None, :]", 3),
        ("y.to(y_ptr.dtype.element_ty), mask=mask)",
         "y.to(y_ptr.dtype.element_ty), mask=row_mask[:, None] & mask)", 2),
    ),
    ("softmax", "no row mask"): (  # only for plans with one row a program
        ("tl.minimum(rows, n_rows - 1).to(tl.int64)", "rows.to(tl.int64)", 2),
        ("mask=(rows < n_rows)[:, None] & col_mask,", "mask=col_mask,", 2),
    ),
}
MODULES = {"rmsnorm": rmsnorm, "softmax": softmax}
PARTS = ("placement", "cases", "registers", "softmax")


def variant(module_name: str, label: str, directory: Path):
    """The reference module ``module_name`` with ``REWRITES[(module_name, label)]`` applied."""
    name = f"_probe_{module_name}_{label.replace(' ', '_')}"
    return rewritten(MODULES[module_name], REWRITES[(module_name, label)], directory, name)


def rmsnorm_launch(module, x, residual, weight, y, eps, **options):
    """The module's forward kernel into ``y``, with the launch its wrapper makes; ``options``
    replace or add compile-time values and launch options (``MASK_ROWS``, ``maxnreg``)."""
    n_rows, n_cols = x.shape
    plan = module.forward_plan(n_rows, n_cols, x.element_size())
    meta = dict(
        N=n_cols, BLOCK=plan.block_cols, ROWS=plan.rows_per_program, CHUNKED=plan.chunked,
        STORE_RSTD=False, NUM_STAGES=plan.num_stages, EVICT_ROWS=module._evict_rows(n_cols),
        MASK_ROWS=module._mask_rows(plan, x.dtype, n_rows), num_warps=plan.num_warps,
    )  # fmt: skip
    meta |= options

    def launch():
        module._rmsnorm_fwd_kernel[plan.grid(n_rows)](
            x, residual, weight, y, y, n_rows, x.stride(0), residual.stride(0), float(eps), **meta
        )
        return y

    return launch, plan


def softmax_launch(module, x, y):
    n_rows, n_cols = x.shape
    plan = softmax.choose_row_plan(n_rows, n_cols, x.element_size(), passes=2)

    def launch():
        module._softmax_fwd_kernel[plan.grid(n_rows)](
            x, y, n_rows, x.stride(0), y.stride(0), N=n_cols, BLOCK=plan.block_cols,
            ROWS=plan.rows_per_program, num_warps=plan.num_warps, num_stages=plan.num_stages,
        )  # fmt: skip
        return y

    return launch, plan


def checked(spec, calls: dict, inputs: dict, dtype) -> dict:
    """``calls``, after each one's output has matched the float64 oracle (else stop)."""
    for label, call in calls.items():
        output = call()
        torch.cuda.synchronize()
        if why := timing.oracle_check(spec, (output,), inputs, dtype):
            raise SystemExit(f"row_mask_probe.py: {label} fails the oracle: {why}")
    return calls


def summarize(samples: dict[str, list[float]], **fields) -> list[dict]:
    return [
        {**fields, "candidate": label, "us": statistics.median(values) * 1e3,
         "min_us": min(values) * 1e3, "max_us": max(values) * 1e3,
         "samples_us": [value * 1e3 for value in values]}  # fmt: skip
        for label, values in samples.items()
    ]


def finite_16_bit(shape, generator) -> torch.Tensor:
    """fp16 storage whose bits are finite as fp16 (0.125-1) and as bf16 (tiny, positive)."""
    bits = torch.randint(0x3000, 0x3C00, shape, device="cuda", dtype=torch.int16,
                         generator=generator)  # fmt: skip
    return bits.view(torch.float16)


def placement(variants: dict, rounds: int) -> list[dict]:
    spec = ops.get("rmsnorm")
    generator = torch.Generator(device="cuda").manual_seed(0)
    n_cols = PLACEMENT_SHAPE[1]
    kept, calls, inputs_of = [], {}, {}
    compiled = {dtype: timing.fresh_compile(ops.rmsnorm_composition) for dtype in SIXTEEN_BIT}
    for index, spacer in enumerate(SPACERS_MIB):
        kept.append(torch.empty(spacer * 2**20 + 1, dtype=torch.uint8, device="cuda"))
        x, residual, y = (finite_16_bit(PLACEMENT_SHAPE, generator) for _ in range(3))
        kept.append((x, residual, y))
        for dtype in SIXTEEN_BIT:
            weight = (1.0 + 0.1 * torch.randn(n_cols, device="cuda", generator=generator))
            views = [t.view(dtype) for t in (x, residual, y)]
            inputs = {"x": views[0], "residual": views[1], "weight": weight.to(dtype),
                      "eps": ops.RMSNORM_EPS}  # fmt: skip
            case = f"set {index} {ops.dtype_name(dtype)}"
            for label, (module, options) in variants.items():
                calls[f"{case}|{label}"] = rmsnorm_launch(
                    module, *views[:2], inputs["weight"], views[2], inputs["eps"], **options
                )[0]
            calls[f"{case}|compile"] = (
                lambda f=compiled[dtype], i=inputs: f(i["x"], i["residual"], i["weight"], i["eps"])
            )
            inputs_of[case] = inputs
    for case, inputs in inputs_of.items():
        dtype = inputs["x"].dtype
        checked(spec, {k: v for k, v in calls.items() if k.startswith(case + "|")}, inputs, dtype)
    samples = timing.interleaved_graph_samples(calls, rounds=rounds)
    rows = []
    for key, values in samples.items():
        case, label = key.split("|")
        _, index, dtype = case.split()
        rows += summarize({label: values}, part="placement", shape="4096x32768", dtype=dtype,
                          buffer_set=int(index), spacer_mib=SPACERS_MIB[int(index)])  # fmt: skip
    return rows


def cases(variants: dict, rounds: int) -> list[dict]:
    spec = ops.get("rmsnorm")
    rows = []
    for shape in spec.default_shapes:
        for dtype in spec.dtypes:
            inputs = spec.make_inputs(shape, dtype, 0, "cuda")
            x, residual, weight, eps = (inputs[k] for k in ("x", "residual", "weight", "eps"))
            y = torch.empty_like(x)
            calls = {}
            for label, (module, options) in variants.items():
                launch, plan = rmsnorm_launch(module, x, residual, weight, y, eps, **options)
                if options.get("MASK_ROWS") is False and shape[0] % plan.rows_per_program:
                    continue  # the last program's rows past the end would be read and written
                calls[label] = launch
            compiled = timing.fresh_compile(ops.rmsnorm_composition)
            calls["compile"] = lambda f=compiled, i=inputs: f(*i.values())
            samples = timing.interleaved_graph_samples(checked(spec, calls, inputs, dtype),
                                                       rounds=rounds)  # fmt: skip
            rows += summarize(samples, part="cases", shape=f"{shape[0]}x{shape[1]}",
                              dtype=ops.dtype_name(dtype),
                              rows_per_program=plan.rows_per_program)  # fmt: skip
    return rows


def registers(variants: dict, rounds: int) -> list[dict]:
    """The 16-bit one-chunk plans with each variant's registers capped at 32 (``maxnreg``): at
    32 a thread, two 1024-thread programs share an SM; at 33 or more, one program has it."""
    spec = ops.get("rmsnorm")
    rows = []
    for shape in REGISTER_SHAPES:
        for dtype in SIXTEEN_BIT:
            inputs = spec.make_inputs(shape, dtype, 0, "cuda")
            x, residual, weight, eps = inputs.values()
            y = torch.empty_like(x)
            calls = {}
            for label, (module, options) in variants.items():
                calls[label] = rmsnorm_launch(module, x, residual, weight, y, eps, **options)[0]
                calls[f"{label}, maxnreg 32"] = rmsnorm_launch(
                    module, x, residual, weight, y, eps, **options, maxnreg=32
                )[0]
            samples = timing.interleaved_graph_samples(checked(spec, calls, inputs, dtype),
                                                       rounds=rounds)  # fmt: skip
            rows += summarize(samples, part="registers", shape=f"{shape[0]}x{shape[1]}",
                              dtype=ops.dtype_name(dtype))  # fmt: skip
    return rows


def softmax_cases(variants: dict, rounds: int) -> list[dict]:
    spec = ops.get("softmax")
    rows = []
    for shape in SOFTMAX_SHAPES:
        for dtype in SIXTEEN_BIT:
            inputs = spec.make_inputs(shape, dtype, 0, "cuda")
            y = torch.empty_like(inputs["x"])
            calls = {}
            for label, module in variants.items():
                calls[label], plan = softmax_launch(module, inputs["x"], y)
            if plan.rows_per_program != 1 or plan.chunked:
                raise SystemExit(f"row_mask_probe.py: softmax {shape} is not one row a program")
            samples = timing.interleaved_graph_samples(checked(spec, calls, inputs, dtype),
                                                       rounds=rounds)  # fmt: skip
            rows += summarize(samples, part="softmax", shape=f"{shape[0]}x{shape[1]}",
                              dtype=ops.dtype_name(dtype))  # fmt: skip
    return rows


def print_table(rows: list[dict]) -> None:
    """One line per case: each candidate's median us and its speed against the reference."""
    groups: dict[tuple, dict[str, dict]] = {}
    for row in rows:
        key = (row["part"], row["shape"], row["dtype"], row.get("buffer_set", ""))
        groups.setdefault(key, {})[row["candidate"]] = row
    for (part, shape, dtype, buffer_set), by_label in groups.items():
        base = (by_label.get("reference") or next(iter(by_label.values())))["us"]
        where = f"set {buffer_set}" if buffer_set != "" else ""
        cells = "  ".join(
            f"{label} {row['us']:7.2f} ({base / row['us']:.3f})" for label, row in by_label.items()
        )
        print(f"{part:9s} {shape:>10s} {dtype:8s} {where:5s}  {cells}")


def main(argv=None) -> int:
    parser = OneLineParser(prog="row_mask_probe", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive_int, default=7,
                        help="interleaved timing rounds (default 7)")  # fmt: skip
    parser.add_argument("--part", choices=PARTS, action="append",
                        help="run only these parts (default: all)")  # fmt: skip
    parser.add_argument("--output", help="write the rows as JSON here")
    args = parser.parse_args(argv)
    timing.require_gpu("row_mask_probe.py")
    parts = args.part or PARTS
    timing.warm_gpu()
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        sys.path.insert(0, str(REPO_ROOT))
        # label -> (module, the compile-time values it is launched with besides the wrapper's)
        variants = {
            "row mask": (rmsnorm, {"MASK_ROWS": True}),
            "no row mask": (rmsnorm, {"MASK_ROWS": False}),
            "rows clamped": (variant("rmsnorm", "rows clamped", Path(directory)), {}),
        }
        if "placement" in parts:
            rows += placement(variants, args.rounds)
        if "cases" in parts:
            rows += cases({"reference": (rmsnorm, {})} | variants, args.rounds)
        if "registers" in parts:
            rows += registers(variants, args.rounds)
        if "softmax" in parts:
            softmax_variants = {"reference": softmax,
                                "no row mask": variant("softmax", "no row mask", Path(directory))}
            rows += softmax_cases(softmax_variants, args.rounds)
    print_table(rows)
    timing.write_json(args.output, {"environment": timing.environment(), "rows": rows},
                      script=__file__, argv=argv)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
