"""Launch one version of the RMSNorm forward three times, untimed, for a profiler (GPU only).

    ncu --clock-control none --launch-skip 2 --launch-count 1 -k regex:rmsnorm_fwd \\
        --metrics gpu__time_duration.sum,launch__registers_per_thread --csv \\
        python3 scripts/profile_rmsnorm_forward.py --dtype bfloat16 --version row-mask

The versions are those ``scripts/row_mask_probe.py`` times: ``reference`` (the wrapper's
rule), ``row-mask`` and ``no-row-mask`` (``MASK_ROWS`` set either way), ``rows-clamped`` (the
rows past the end reread the last row; loads masked by column only). The first launch
compiles; the profiler takes the third (``--launch-skip 2``), on inputs from the registry.
``--clock-control none`` leaves the GPU's clocks as they are (Nsight Compute locks them to
base by default). ``results/h200/ncu-rmsnorm-row-mask*.log`` were recorded this way
(``scripts/h200_evidence.sh row-mask``).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
import row_mask_probe as probe  # noqa: E402
from _records import OneLineParser  # noqa: E402

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402
from reference.kernels import rmsnorm  # noqa: E402

VERSIONS = {"reference": {}, "row-mask": {"MASK_ROWS": True},
            "no-row-mask": {"MASK_ROWS": False}, "rows-clamped": None}  # fmt: skip
LAUNCHES = 3


def parse_shape(text: str) -> tuple[int, int]:
    try:
        rows, cols = (int(part) for part in text.lower().split("x"))
    except ValueError:
        rows = cols = 0
    if rows < 1 or cols < 1:
        raise ValueError(f"expected ROWSxCOLS of positive whole numbers, got {text!r}")
    return rows, cols


def main(argv=None) -> int:
    parser = OneLineParser(prog="profile_rmsnorm_forward", description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", choices=("float16", "bfloat16", "float32"), required=True)
    parser.add_argument("--version", choices=tuple(VERSIONS), default="reference")
    parser.add_argument("--shape", default="4096x32768", help="ROWSxCOLS (default 4096x32768)")
    args = parser.parse_args(argv)
    try:
        shape = parse_shape(args.shape)
    except ValueError as error:
        parser.error(f"--shape: {error}")
    timing.require_gpu("profile_rmsnorm_forward.py")
    inputs = ops.get("rmsnorm").make_inputs(shape, ops.dtype_from_name(args.dtype), 0, "cuda")
    x, residual, weight, eps = inputs.values()
    y = torch.empty_like(x)
    with tempfile.TemporaryDirectory() as directory:
        options = VERSIONS[args.version]
        module = rmsnorm
        if options is None:
            module, options = probe.variant("rmsnorm", "rows clamped", Path(directory)), {}
        launch, plan = probe.rmsnorm_launch(module, x, residual, weight, y, eps, **options)
        for _ in range(LAUNCHES):
            launch()
        torch.cuda.synchronize()
    print(f"launched the {args.version} RMSNorm forward {LAUNCHES} times: {args.dtype} "
          f"{shape[0]}x{shape[1]}, {plan}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
