"""Do the writing kernels stream faster with a hint on their stores? (GPU, ~2 min)

    python3 scripts/store_hint.py --output results/h200/store-hint.json

Under Nsight Compute (``ncu-evict-*.log``) an ``evict_first`` hint on the *loads* of the add
and of the RMSNorm forward changed no byte they read, sent 3-7% fewer of their writes to DRAM
during the call, and cost them 6-11%: the time seems to go with the output's dirty lines that
stay in the L2. This probe asks the converse: what a hint on the *stores* does, which tells
the L2 to let the written lines go first. It times, at 16384 x 4096, the reference add,
softmax and RMSNorm forward twice (an A/A pair), each with its output stores rewritten to say
``eviction_policy="evict_first"`` and, separately, ``cache_modifier=".cs"`` (PTX's streaming
store: the line is likely accessed once), and torch.compile (``dynamic=False``), every output
checked against the float64 oracle first, interleaved with every graph captured first, and
prints the ratio of medians and the paired ratio against compile with the rounds lost and a
sign test (``streaming_variants.paired_rows``). A probe only: the reference is unchanged.
"""

from __future__ import annotations

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
from reference.kernels import add, rmsnorm, softmax  # noqa: E402

SHAPE = (16384, 4096)
CASES = (("add", torch.float16), ("add", torch.float32), ("softmax", torch.float16),
         ("softmax", torch.bfloat16), ("softmax", torch.float32), ("rmsnorm", torch.float16),
         ("rmsnorm", torch.float32))  # fmt: skip
MODULES = {"add": (add, "add"), "softmax": (softmax, "softmax"), "rmsnorm": (rmsnorm, "rmsnorm")}
_SOFTMAX_Y = ("        y.to(y_ptr.dtype.element_ty),\n"
              "        mask=(rows < n_rows)[:, None] & col_mask")  # fmt: skip
# each op's output stores, as the reference writes them: (old, new with {hint}, count)
_STORES = {
    "add": [("(x + y).to(out_ptr.dtype.element_ty))", "(x + y).to(out_ptr.dtype.element_ty){hint})",
             1),
            ("(x + y).to(out_ptr.dtype.element_ty), mask=mask)",
             "(x + y).to(out_ptr.dtype.element_ty), mask=mask{hint})", 1)],
    "softmax": [(f"{_SOFTMAX_Y},", _SOFTMAX_Y + "{hint},", 1)],
    "rmsnorm": [("tl.store(y_row + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)",
                 "tl.store(y_row + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask{hint})",
                 2)],
}  # fmt: skip
HINTS = {"store evict_first": ', eviction_policy="evict_first"',
         "store .cs": ', cache_modifier=".cs"'}  # fmt: skip


def store_rewrites(op: str, hint: str) -> list:
    return [(old, new.format(hint=HINTS[hint]), count) for old, new, count in _STORES[op]]


def variants(directory: Path) -> dict[tuple[str, str], object]:
    """Each op's module with its stores rewritten each way: {(op, hint): module}."""
    return {(op, hint): rewritten(MODULES[op][0], store_rewrites(op, hint), directory,
                                  f"{op}_store_{index}")
            for op in MODULES for index, hint in enumerate(HINTS)}  # fmt: skip


def case_calls(op: str, inputs: dict, modules: dict) -> dict[str, object]:
    """The reference twice, each store hint and compile, as zero-argument calls."""
    spec = ops.get(op)
    args = tuple(inputs.values())
    reference = spec.kernel_function("reference")
    calls = {"reference": lambda: reference(*args), "reference again": lambda: reference(*args)}
    for hint in HINTS:
        function = getattr(modules[op, hint], MODULES[op][1])
        calls[hint] = lambda f=function: f(*args)
    compiled = fresh_compiled(next(iter(spec.baselines.values())))
    calls["compile"] = lambda: compiled(*args)
    return calls


def main(argv=None) -> int:
    parser = OneLineParser(prog="store_hint", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive_int, default=9,
                        help="interleaved rounds (default 9)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the shuffled order of the rounds (default 0)")
    parser.add_argument("--output", help="write the rows as JSON here")
    args = parser.parse_args(argv)
    timing.require_gpu("store_hint.py")
    ops.numerics_policy()
    timing.warm_gpu()
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        modules = variants(Path(directory))
        for op, dtype in CASES:
            inputs = ops.get(op).make_inputs(SHAPE, dtype, 0, "cuda")
            rows += paired_rows(op, SHAPE, dtype, inputs, case_calls(op, inputs, modules),
                                args.rounds, args.seed)  # fmt: skip
    print_table(rows)
    timing.write_json(args.output, {"environment": timing.environment(), "seed": args.seed,
                                    "rows": rows}, script=__file__, argv=argv)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
