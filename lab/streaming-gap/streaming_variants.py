"""Which difference from Inductor's fp32 streaming kernels costs the reference? (GPU, ~2 min)

    python3 lab/streaming-gap/streaming_variants.py --output results/h200/streaming-variants.json

Paired by round, torch.compile's fp32 ``add``, ``sum`` and ``max`` at 16384 x 4096 and
4096 x 32768 beat the reference by 0.3-0.7% in 13-15 of 15 rounds (``results/NOTES.md``).
Nsight Compute found the row reductions launched exactly as Inductor launches its own (one
row a program, 16 warps) with three differences in the code (``ncu-fp32-*.log``): Inductor's
loads say ``eviction_policy="evict_first"``, it indexes in int32 where the reference computes
int64 row offsets, and at 4096 x 32768 it uses two registers fewer a thread. Its ``add``
launches 512- or 1024-element blocks where the reference launches 4096.

This script times, for each case, the reference, the reference again (an A/A pair), the
reference with each difference alone and with both (its source rewritten by
``_variants.rewritten``: ``evict_first`` on the row loads, int32 offsets), the add with
Inductor's block and warp count (the wrapper's ``block`` and ``num_warps`` arguments), and
torch.compile (``dynamic=False``, as kernel-bench builds it). Every output is checked against
the float64 oracle first; then all are timed interleaved, every graph captured first
(``_gpu_timing.interleaved_graph_samples``). Each row gives the ratio of medians against
compile and, pairing the samples of one round as ``score_targets.py`` does, the paired
ratio and the rounds lost to compile, with a sign test. The int32 offsets are only right
while a tensor has fewer than 2**31 elements, as every case here does; they are a probe, not
a rule for the reference.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))  # the shared helpers

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
from _paired_rows import paired_rows, print_table  # noqa: E402
from _records import OneLineParser, positive_int  # noqa: E402
from _variants import REDUCTIONS_BEFORE, rewritten  # noqa: E402

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402
from learning.bench.variants import fresh_compiled  # noqa: E402
from reference.kernels import add, reductions  # noqa: E402

CASES = (("sum", (4096, 32768)), ("sum", (16384, 4096)), ("max", (4096, 32768)),
         ("add", (16384, 4096)), ("add", (4096, 32768)))  # fmt: skip
DTYPE = torch.float32

_SUM_LOAD = "x = tl.load(row_start + cols[None, :], mask=(cols < N)[None, :], other=0.0)"
_MAX_LOAD = 'x = tl.load(row_start + cols[None, :], mask=(cols < N)[None, :], other=float("-inf"))'
_EVICT_FIRST = [(_SUM_LOAD, _SUM_LOAD[:-1] + ', eviction_policy="evict_first")', 1),
                (_MAX_LOAD, _MAX_LOAD[:-1] + ', eviction_policy="evict_first")', 1)]  # fmt: skip
_INT32 = [("tl.minimum(rows, n_rows - 1).to(tl.int64)[:, None]",
           "tl.minimum(rows, n_rows - 1)[:, None]", 2)]  # fmt: skip
_ADD_EVICT_FIRST = [
    (f"{name} = tl.load({name}_ptr + offsets).to(tl.float32)",
     f'{name} = tl.load({name}_ptr + offsets, eviction_policy="evict_first").to(tl.float32)', 1)
    for name in ("x", "y")
]  # fmt: skip
_ADD_INT32 = [("block_start = pid.to(tl.int64) * BLOCK", "block_start = pid * BLOCK", 1)]
# Inductor's pointwise launches for these sizes (ncu-fp32-add-*-compile.log): elements, warps
INDUCTOR_ADD_BLOCKS = {(16384, 4096): (512, 8), (4096, 32768): (1024, 4)}


def reduction_variants(directory: Path) -> dict[str, object]:
    """The row-reduction module as this probe measured it (``_variants.REDUCTIONS_BEFORE``:
    the current kernels took up ``evict_first`` since, ``row_sum_code.py``) rewritten three
    ways: {label: module}."""
    before = REDUCTIONS_BEFORE
    return {
        "evict_first": rewritten(reductions, before + _EVICT_FIRST, directory,
                                 "reductions_evict_first"),
        "int32": rewritten(reductions, before + _INT32, directory, "reductions_int32"),
        "evict_first+int32": rewritten(reductions, before + _EVICT_FIRST + _INT32, directory,
                                       "reductions_evict_first_int32"),
    }  # fmt: skip


def add_variants(directory: Path) -> dict[str, object]:
    return {
        "evict_first": rewritten(add, _ADD_EVICT_FIRST, directory, "add_evict_first"),
        "int32": rewritten(add, _ADD_INT32, directory, "add_int32"),
    }


def case_calls(op: str, shape, inputs: dict, modules: dict) -> dict[str, object]:
    """Every candidate for one case, as zero-argument calls."""
    spec = ops.get(op)
    args = tuple(inputs.values())
    reference = spec.kernel_function("reference")
    calls = {"reference": lambda: reference(*args), "reference again": lambda: reference(*args)}
    if op == "add":
        for label, module in modules["add"].items():
            calls[label] = lambda m=module: m.add(*args)
        block, warps = INDUCTOR_ADD_BLOCKS[tuple(shape)]
        calls[f"block {block}, {warps} warps"] = lambda: add.add_fwd(*args, block=block,
                                                                      num_warps=warps)  # fmt: skip
    else:
        name = "row_sum" if op == "sum" else "row_max"
        for label, module in modules["reductions"].items():
            calls[label] = lambda m=module: getattr(m, name)(*args)
    compiled = fresh_compiled(next(iter(spec.baselines.values())))
    calls["compile"] = lambda: compiled(*args)
    return calls


def time_case(op: str, shape, modules: dict, rounds: int, seed: int) -> list[dict]:
    inputs = ops.get(op).make_inputs(shape, DTYPE, 0, "cuda")
    return paired_rows(op, shape, DTYPE, inputs, case_calls(op, shape, inputs, modules),
                       rounds, seed)  # fmt: skip


def main(argv=None) -> int:
    parser = OneLineParser(prog="streaming_variants", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive_int, default=7,
                        help="interleaved rounds (default 7)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the shuffled order of the rounds (default 0)")
    parser.add_argument("--output", help="write the rows as JSON here")
    args = parser.parse_args(argv)
    timing.require_gpu("streaming_variants.py")
    ops.numerics_policy()
    timing.warm_gpu()
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        modules = {"reductions": reduction_variants(Path(directory)),
                   "add": add_variants(Path(directory))}  # fmt: skip
        for op, shape in CASES:
            rows += time_case(op, shape, modules, args.rounds, args.seed)
    print_table(rows)
    timing.write_json(args.output, {"environment": timing.environment(), "seed": args.seed,
                                    "rows": rows}, script=__file__, argv=argv)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
