"""How much of its tolerance does each reference kernel use, over many random inputs?

For each op (the registry's ``training`` group unless ``--op`` names others) and each of its
dtypes, ``--trials`` times: make the op's inputs (``spec.inputs``) from the trial's seed, rescale
them by factors drawn from that seed (the data and, for training ops, the incoming gradient,
each by 2^u with u uniform in [-2, 2]), cycle through the op's shapes (the registry's default
shapes on a GPU, its small CPU shapes under the interpreter, or ``--shape``), run the reference
implementation through ``spec.call`` (training ops: forward and autograd backward) and compare
every output (each gradient) with the float64 oracle by the course's own rule,
``learning.correctness.compare_all``. The figure kept is the ``tolerance_used`` that comparison
reports: the worst ``|out - ref| / (atol * max|ref| + rtol * |ref|)`` over the output's
elements, so 1.0 is exactly at the tolerance; an output that fails for another reason (NaN,
wrong shape or dtype, an exception) counts as infinity.

The table printed last gives, per op, dtype and output, the max, 99th percentile and median of
that fraction over the trials, the number of trials that failed (fraction > 1) and the worst
trial's seed and shape. Exit status: 0 when every trial passed, 1 when any failed, 2 for bad
arguments (one line; nothing is run or written). ``--output`` is written as a script record
(scripts/_records.py) once every trial has run.

Trial ``i`` uses seed ``--seed + i`` and the ``i``-th shape (cycling); the scales come from the
seed. So one trial is reproduced by naming its op, dtype, shape and seed::

    python3 scripts/tolerance_probe.py --op softmax_train --dtypes float16 \\
        --shape 1823x781 --seed 20257 --trials 1

Under the interpreter, bfloat16 GEMM cases are skipped with a note: the interpreter's bf16
``tl.dot`` is wrong (triton #11584), so the reference upcasts the tiles to fp32 there, and the
figure would not describe the compiled kernel.

Usage, from the repository root:

    python3 scripts/tolerance_probe.py --output results/h200/tolerance-probe.json
    python3 scripts/tolerance_probe.py --op softmax_train,matmul --dtypes float32 --trials 5
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import learning  # noqa: E402,F401  (chooses compiled or interpreted Triton before it is imported)

# isort: split
import torch  # noqa: E402
import triton  # noqa: E402
from _records import environment, write_output  # noqa: E402  (scripts/_records.py)

from learning import ops  # noqa: E402
from learning.correctness import Verdict, compare_all, output_labels  # noqa: E402
from learning.runtime import backend, default_device  # noqa: E402

IMPL = "reference"
DEFAULT_SEED = 20250
GPU_TRIALS = 50
INTERPRETER_TRIALS = 5
SCALE_LOG2 = 2.0  # inputs and incoming gradients are scaled by 2^u, u uniform in [-2, 2]
MAX_FAILURE_LINES = 5  # per op and dtype; the record keeps every trial
INTERPRETER_BF16_DOT = (
    "skipped under the interpreter: its bf16 tl.dot is wrong (triton #11584), so the reference "
    "upcasts bf16 tiles to fp32 there and the figure would not describe the compiled kernel"
)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors reach ``main`` (one line, exit 2), not a usage dump."""

    def error(self, message):
        raise ValueError(message)


# --------------------------------------------------------------------------- one trial


def trial_scales(seed: int) -> tuple[float, float]:
    """``(input_scale, grad_scale)`` for the trial with this seed: each 2^u, u in [-2, 2]."""
    draw = random.Random(seed)
    return (
        2.0 ** draw.uniform(-SCALE_LOG2, SCALE_LOG2),
        2.0 ** draw.uniform(-SCALE_LOG2, SCALE_LOG2),
    )


def trial_inputs(spec: ops.OpSpec, shape, dtype: torch.dtype, seed: int, device) -> dict:
    """The registry's inputs for ``seed``, every floating tensor rescaled by the seed's factor
    (``grad_output`` by the second one), rounded once to ``dtype``; ``wrt`` still needs grad."""
    input_scale, grad_scale = trial_scales(seed)
    inputs = {}
    for name, value in spec.inputs(shape, dtype, seed, device).items():
        if not (torch.is_tensor(value) and value.is_floating_point()):
            inputs[name] = value  # eps
            continue
        factor = grad_scale if name == "grad_output" else input_scale
        scaled = (value.detach().float() * factor).to(value.dtype)
        inputs[name] = scaled.requires_grad_(name in spec.wrt)
    return inputs


def output_verdicts(spec: ops.OpSpec, outputs, expected, dtype: torch.dtype) -> dict:
    """Label -> :class:`~learning.correctness.Verdict` of each output, by ``compare_all``.

    When the number of outputs is wrong, ``compare_all`` returns one failing verdict; every
    label gets it."""
    labels = output_labels(spec)
    verdicts = compare_all(
        tuple(outputs), tuple(expected), spec.tolerances[dtype], dtype=dtype, labels=labels
    )
    if len(verdicts) != len(labels):
        verdicts = [verdicts[0]] * len(labels)
    return dict(zip(labels, verdicts, strict=True))


def fraction_used(verdict: Verdict) -> float:
    """The share of the tolerance an output used (the comparison's ``tolerance_used``: worst
    ``|error| / bound``); infinity when it failed before anything could be measured (or the
    ratio is NaN, which the comparison fails too)."""
    used = verdict.tolerance_used
    if used is None:
        return 0.0 if verdict.passed else math.inf
    return math.inf if math.isnan(used) else used


def synchronize() -> None:
    if backend() == "cuda" and torch.cuda.is_available():
        torch.cuda.synchronize()


def run_trial(spec, function, shape, dtype, trial: int, seed: int, device) -> dict:
    """One trial: the fraction of the tolerance each output used, and whether it passed."""
    input_scale, grad_scale = trial_scales(seed)
    row = {
        "trial": trial, "seed": seed, "shape": spec.shape_label(shape),
        "input_scale": input_scale, "grad_scale": grad_scale if spec.training else None,
        "fractions": {}, "failed": [], "max_abs_errors": {}, "reason": "",
    }  # fmt: skip
    labels = output_labels(spec)
    try:
        inputs = trial_inputs(spec, shape, dtype, seed, device)
        outputs = spec.call(function, inputs)
        synchronize()
        verdicts = output_verdicts(spec, outputs, spec.expected(inputs), dtype)
    except Exception as error:  # the kernel (or the oracle) raised: every output failed
        row["reason"] = f"raised {error!r}"[:400]
        row["fractions"] = {label: math.inf for label in labels}
        row["failed"] = list(labels)
        return row
    for label, verdict in verdicts.items():
        row["fractions"][label] = fraction_used(verdict)
        row["max_abs_errors"][label] = verdict.max_abs_error
        if not verdict.passed:
            row["failed"].append(label)
    row["reason"] = "; ".join(dict.fromkeys(v.reason for v in verdicts.values() if v.reason))
    return row


# --------------------------------------------------------------------------- summaries


def percentile(values, q: float) -> float:
    """The ``q``-th percentile of ``values``, interpolated linearly (numpy's default)."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    a, b = ordered[low], ordered[high]
    if a == b or position == low:
        return a
    return a + (b - a) * (position - low)


def reproduce_command(spec, dtype_name: str, shape: str, seed: int) -> str:
    return (
        f"python3 scripts/tolerance_probe.py --op {spec.name} --dtypes {dtype_name} "
        f"--shape {shape} --seed {seed} --trials 1"
    )


def summarize(spec, dtype: torch.dtype, rows: list[dict]) -> list[dict]:
    """One summary per output of ``spec`` over ``rows`` (this op's trials at ``dtype``)."""
    tolerance = spec.tolerances[dtype]
    dtype_name = ops.dtype_name(dtype)
    summaries = []
    for label in output_labels(spec):
        fractions = [row["fractions"][label] for row in rows]
        worst = max(rows, key=lambda row: row["fractions"][label])
        summaries.append({
            "op": spec.name, "dtype": dtype_name, "output": label,
            "atol": tolerance.atol, "rtol": tolerance.rtol, "trials": len(rows),
            "shapes": list(dict.fromkeys(row["shape"] for row in rows)),
            "max_fraction": max(fractions), "p99_fraction": percentile(fractions, 99),
            "median_fraction": percentile(fractions, 50),
            "failures": sum(label in row["failed"] for row in rows),
            "worst_seed": worst["seed"], "worst_shape": worst["shape"],
            "reproduce": reproduce_command(spec, dtype_name, worst["shape"], worst["seed"]),
        })  # fmt: skip
    return summaries


def probe_case(spec, function, dtype, shapes, trials: int, seed: int, device):
    """``(rows, summaries)`` of ``trials`` trials of one op at one dtype; prints one line (and
    the first failures, each with the command that reproduces it)."""
    dtype_name = ops.dtype_name(dtype)
    started = time.perf_counter()
    rows = []
    for trial in range(trials):
        shape = shapes[trial % len(shapes)]
        row = run_trial(spec, function, shape, dtype, trial, seed + trial, device)
        rows.append({"op": spec.name, "dtype": dtype_name, **row})
    summaries = summarize(spec, dtype, rows)
    worst = max(summaries, key=lambda s: s["max_fraction"])
    failed = [row for row in rows if row["failed"]]
    print(
        f"{spec.name:14s} {dtype_name:9s} {trials} trials over {len(shapes)} shape(s): "
        f"worst {worst['output']} {_fraction(worst['max_fraction'])}, "
        f"{len(failed)} failed ({time.perf_counter() - started:.1f} s)",
        flush=True,
    )
    for row in failed[:MAX_FAILURE_LINES]:
        command = reproduce_command(spec, dtype_name, row["shape"], row["seed"])
        print(
            f"  FAILED seed {row['seed']} shape {row['shape']} ({', '.join(row['failed'])}): "
            f"{row['reason']}\n    reproduce: {command}",
            flush=True,
        )
    if len(failed) > MAX_FAILURE_LINES:
        print(f"  ... and {len(failed) - MAX_FAILURE_LINES} more failed trials", flush=True)
    return rows, summaries


def _fraction(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:.4f}"


COLUMNS = (
    ("op", 14), ("dtype", 9), ("output", 13), ("trials", 6), ("max", 8), ("p99", 8),
    ("median", 8), ("failed", 6), ("worst seed", 10), ("worst shape", 14),
)  # fmt: skip


def print_table(summaries: list[dict]) -> None:
    print("fraction of the tolerance used (worst |error| / bound per trial; > 1 fails):")
    print(" ".join(f"{name:>{width}}" for name, width in COLUMNS))
    for row in summaries:
        cells = (
            row["op"], row["dtype"], row["output"], str(row["trials"]),
            _fraction(row["max_fraction"]), _fraction(row["p99_fraction"]),
            _fraction(row["median_fraction"]), str(row["failures"]),
            str(row["worst_seed"]), row["worst_shape"],
        )  # fmt: skip
        print(" ".join(f"{cell:>{width}}" for cell, (_, width) in zip(cells, COLUMNS, strict=True)))


# --------------------------------------------------------------------------- arguments


def parse_shape(text: str) -> tuple[int, ...]:
    try:
        dims = tuple(int(part) for part in text.lower().split("x"))
    except ValueError:
        raise ValueError(
            f"--shape {text!r} is not dimensions joined by 'x' (e.g. 1024x1024)"
        ) from None
    if any(dim <= 0 for dim in dims):
        raise ValueError(f"--shape {text!r}: every dimension must be positive")
    return dims


def parse_args(argv=None) -> argparse.Namespace:
    parser = _Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--op", "--ops", dest="ops", default="training",
        help="comma-separated op or group names (default: the training group)",
    )  # fmt: skip
    parser.add_argument("--dtypes", default="", help="comma-separated dtypes (default: each op's)")
    parser.add_argument(
        "--trials", type=int, default=None,
        help=f"trials per op and dtype (default {GPU_TRIALS} on a GPU, "
        f"{INTERPRETER_TRIALS} under the interpreter)",
    )  # fmt: skip
    parser.add_argument(
        "--shape", action="append", default=[],
        help="a shape such as 1024x1024 or 64x64x64 (repeatable; each op takes those with its "
        "number of dimensions; default: the registry's GPU or CPU shapes)",
    )  # fmt: skip
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="the first trial's seed")
    parser.add_argument("--output", type=Path, help="write the JSON record here")
    return parser.parse_args(argv)


def plan(args: argparse.Namespace, on_gpu: bool) -> list[tuple]:
    """``[(spec, dtypes, shapes)]`` for the arguments, or a one-line ValueError."""
    specs = []
    for name in filter(None, (part.strip() for part in args.ops.split(","))):
        specs += [s for s in ops.resolve(name) if s not in specs]
    if not specs:
        raise ValueError("--op names no op")
    chosen = [ops.dtype_from_name(d.strip()) for d in args.dtypes.split(",") if d.strip()]
    if args.trials is not None and args.trials < 1:
        raise ValueError(f"--trials must be at least 1, got {args.trials}")
    if args.seed < 0:
        raise ValueError(f"--seed must be non-negative, got {args.seed}")
    given = [parse_shape(part.strip()) for text in args.shape for part in text.split(",")]
    cases = []
    for spec in specs:
        if given:
            shapes = [s for s in given if len(s) == len(spec.shape_names)]
            if not shapes:
                convention = "x".join(spec.shape_names)
                raise ValueError(f"--shape gives no {convention} shape for {spec.name}")
            shapes = [spec.validate_shape(s) for s in shapes]
        else:
            shapes = list(spec.default_shapes if on_gpu else spec.cpu_shapes)
        dtypes = [d for d in spec.dtypes if not chosen or d in chosen]
        if dtypes:
            cases.append((spec, dtypes, shapes))
    if not cases:
        raise ValueError(f"no op named by --op runs in dtypes {args.dtypes}")
    return cases


# --------------------------------------------------------------------------- main


def main(argv=None) -> int:
    on_gpu = backend() == "cuda"
    try:
        args = parse_args(argv)
        cases = plan(args, on_gpu)
    except ValueError as error:
        print(f"tolerance_probe: {error}", file=sys.stderr)
        return 2
    trials = args.trials or (GPU_TRIALS if on_gpu else INTERPRETER_TRIALS)
    ops.numerics_policy()
    device = default_device()
    print(
        f"backend: {backend()}  device: {device}  torch {torch.__version__}  "
        f"triton {triton.__version__}\n{trials} trials per op and dtype, seeds {args.seed}.."
        f"{args.seed + trials - 1}, inputs scaled by 2^u, u in [-{SCALE_LOG2:g}, {SCALE_LOG2:g}]",
        flush=True,
    )
    started = time.perf_counter()
    rows, summaries, skipped, errors = [], [], [], []
    for spec, dtypes, shapes in cases:
        try:
            function = spec.kernel_function(IMPL)
        except Exception as error:  # a module not written, or one that fails to import
            errors.append({"op": spec.name, "reason": f"import error: {error!r}"[:400]})
            print(f"{spec.name:14s} cannot load {IMPL}.{spec.module}: {error!r}", flush=True)
            continue
        for dtype in dtypes:
            dtype_name = ops.dtype_name(dtype)
            if not on_gpu and spec.is_gemm and dtype == torch.bfloat16:
                skipped.append(
                    {"op": spec.name, "dtype": dtype_name, "reason": INTERPRETER_BF16_DOT}
                )
                print(f"{spec.name:14s} {dtype_name:9s} skipped (see the note below)", flush=True)
                continue
            case_rows, case_summaries = probe_case(
                spec, function, dtype, shapes, trials, args.seed, device
            )
            rows += case_rows
            summaries += case_summaries
        if on_gpu:
            torch.cuda.empty_cache()

    elapsed = time.perf_counter() - started
    failed_trials = sum(bool(r["failed"]) for r in rows)
    print()
    if summaries:
        print_table(summaries)
    for entry in skipped:
        print(f"note: {entry['op']} {entry['dtype']} {entry['reason']}")
    for entry in errors:
        print(f"error: {entry['op']}: {entry['reason']}")
    print(
        f"{len(rows)} trials, {failed_trials} failed"
        f"{f', {len(errors)} op(s) not loaded' if errors else ''}"
        f"{f', {len(skipped)} case(s) skipped' if skipped else ''} in {elapsed:.0f} s",
        flush=True,
    )
    if args.output:
        data = {
            "environment": environment(), "impl": IMPL, "seed": args.seed, "trials": trials,
            "scale_log2_range": [-SCALE_LOG2, SCALE_LOG2], "elapsed_s": elapsed,
            "summaries": summaries, "trial_rows": rows, "skipped": skipped, "errors": errors,
            "note": "fraction = the worst |out - ref| / (atol * max|ref| + rtol * |ref|) of one "
            "output (learning.correctness); a failure other than the bound is infinite (null)",
        }  # fmt: skip
        # a script record (non-finite floats become null), written once every trial has run
        write_output(args.output, __file__, data, argv=argv)
    return 1 if failed_trials or errors else 0


if __name__ == "__main__":
    sys.exit(main())
