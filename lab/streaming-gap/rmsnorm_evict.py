"""Does the RMSNorm forward's eviction-hint rule still choose right? (GPU, ~2 min)

    python3 lab/streaming-gap/rmsnorm_evict.py --output results/h200/rmsnorm-evict.json

The whole-row RMSNorm forward marks its loads of x and residual ``evict_first`` only for rows
narrower than 512 or wider than 8192 (``rmsnorm._evict_rows``), a rule set from an early
tuning run (``tune-rows.log``: without the hint 10% faster at 16384 x 4096, 4-12% at 1823 x 781
and 1024 x 1024, slower at 4096 x 32768 and 65536 x 128). Since then the plans changed, the
benchmark learned to pair its samples by round, and the same hint turned out to close the row
sums' last gap to torch.compile (``row-sum-code.log``), having read as noise one run before.
RMSNorm fp16 at 16384 x 4096 is the one large case still slower than compile round after
round cold (``all-cold.json``).

For every default shape whose forward keeps whole rows (4096 x 32768 walks chunks, where the
rule does not apply) in every dtype, this script times the reference twice (an A/A pair),
the reference with the hint always and never (``rmsnorm._evict_rows`` rewritten to return
True and False: one of the two is the rule's own choice, a second A/A pair), and
torch.compile (``dynamic=False``), every output checked against the float64 oracle first,
interleaved with every graph captured first, and prints the ratio of medians and the paired
ratio against compile with the rounds lost and a sign test
(``streaming_variants.paired_rows``).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))  # the shared helpers

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
from _paired_rows import paired_rows, print_table  # noqa: E402
from _records import OneLineParser, positive_int  # noqa: E402
from _variants import rewritten  # noqa: E402

# isort: split

from learning import ops  # noqa: E402
from learning.bench.variants import fresh_compiled  # noqa: E402
from reference.kernels import rmsnorm  # noqa: E402
from reference.kernels.row_plan import SUPPORTED_DTYPES  # noqa: E402

SHAPES = ((16384, 4096), (65536, 128), (1024, 1024), (1823, 781))  # whole-row plans
_RULE = "    return n_cols > 8192 or n_cols < 512"
REWRITES = {"hint always": [(_RULE, "    return True", 1)],
            "hint never": [(_RULE, "    return False", 1)]}  # fmt: skip


def variants(directory: Path) -> dict[str, object]:
    """The RMSNorm module with its eviction rule rewritten each way: {label: module}."""
    return {label: rewritten(rmsnorm, rewrites, directory, f"rmsnorm_evict_{index}")
            for index, (label, rewrites) in enumerate(REWRITES.items())}  # fmt: skip


def case_calls(inputs: dict, modules: dict) -> dict[str, object]:
    """The reference twice, each variant and compile, as zero-argument calls."""
    spec = ops.get("rmsnorm")
    args = tuple(inputs.values())
    reference = spec.kernel_function("reference")
    calls = {"reference": lambda: reference(*args), "reference again": lambda: reference(*args)}
    for label, module in modules.items():
        calls[label] = lambda m=module: m.rmsnorm(*args)
    compiled = fresh_compiled(next(iter(spec.baselines.values())))
    calls["compile"] = lambda: compiled(*args)
    return calls


def main(argv=None) -> int:
    parser = OneLineParser(prog="rmsnorm_evict", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive_int, default=9,
                        help="interleaved rounds (default 9)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the shuffled order of the rounds (default 0)")
    parser.add_argument("--output", help="write the rows as JSON here")
    args = parser.parse_args(argv)
    timing.require_gpu("rmsnorm_evict.py")
    ops.numerics_policy()
    timing.warm_gpu()
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        modules = variants(Path(directory))
        for shape in SHAPES:
            for dtype in SUPPORTED_DTYPES:
                inputs = ops.get("rmsnorm").make_inputs(shape, dtype, 0, "cuda")
                rows += paired_rows("rmsnorm", shape, dtype, inputs,
                                    case_calls(inputs, modules), args.rounds, args.seed)
    print_table(rows)
    timing.write_json(args.output, {"environment": timing.environment(), "seed": args.seed,
                                    "rows": rows}, script=__file__, argv=argv)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
