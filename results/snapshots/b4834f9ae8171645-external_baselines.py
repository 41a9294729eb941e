"""The reference kernels against strong external baselines at the target shapes (GPU only).

Cases (built from the op registry; ``--cases`` picks some, by op name or by key):

* ``softmax_train-16384x4096-float16`` and ``rmsnorm_train-16384x4096-float16``: one training step
  (forward + backward through autograd, ``dy`` fixed, gradients returned by
  ``torch.autograd.grad``: what ``spec.call`` of a training op does), timed as one call under
  CUDA-graph replay. Variants: ``reference`` (the registry's kernel), ``torch eager`` (the
  registry's first PyTorch baseline, for context), ``torch.compile`` of that function
  (``dynamic=False``; AOTAutograd makes the backward) and Liger-Kernel's Triton kernels
  (``LigerSoftmaxFunction``; ``LigerFusedAddRMSNormFunction``) when ``liger_kernel`` imports.
  Liger is optional: without it the rows say "not installed" and the run goes on.
* ``matmul-8192x8192x8192-bfloat16``, ``matmul-4096x4096x4096-float16``,
  ``matmul-16384x1024x1024-float16``: the GEMM forward. Variants: ``reference``, ``torch.mm``
  (cuBLAS) and ``torch.compile max-autotune`` (Inductor's GEMM autotuning, compiled fresh for the
  shape; 20-60 s each; ``--no-autotune`` skips it, and no autotune compile starts once the run is
  past ``--autotune-budget-s``). The mode is ``max-autotune-no-cudagraphs``: the timing wraps the
  call in its own CUDA graph, and the kernel choice is the same as ``max-autotune``'s.

Every variant of a case is built and checked against the registry's float64 oracle first; then
every variant's CUDA graph is captured, and all of them are timed together, in ``--rounds``
rounds of a shuffled order (``interleaved_graph_ms``: a few replays each a round), and each
reports the median of its samples. Timed one after another, the order decided the result:
the variant timed after a compile's idle seconds met a cooler GPU (see
``interleaved_graph_ms``). A reference
that fails is not timed (and the exit status is 1); a baseline that fails is timed anyway and
flagged, since it is the yardstick, not the candidate, but it is left out of "best baseline".

Semantics of the Liger residual RMSNorm (``casting_mode="gemma"``, ``offset=0``,
``in_place=False``: the closest to the registry's FP32 residual RMSNorm): Liger rounds
``h = x + residual`` to the storage dtype before its FP32 norm (the registry keeps h in FP32);
it returns h as a second output (one more M x N write); the step uses y only, so autograd hands
its backward a zero-filled gradient for h, which it reads (one more M x N fill and read). Its
softmax keeps the storage dtype inside the kernel (the reference computes in FP32). TB/s is the
registry's logical bytes over the time, for every variant alike.

The table's ratio ("vs best") is the best (oracle-passing) baseline's time over the variant's
(> 1: faster); "ref x" is each baseline's time over the reference's. The targets compare the
reference with each named baseline: softmax_train and rmsnorm_train >= 1.5x torch.compile and
>= 1.15x Liger; GEMM >= 1.00x the better of torch.mm and max-autotune.

Usage, from the repository root (the two training cases, or one GEMM shape, per run: about a
minute each on an H200, mostly compiling):

    python scripts/external_baselines.py --cases softmax_train rmsnorm_train --output rows.json
    python scripts/external_baselines.py --cases matmul-8192x8192x8192-bfloat16 --output g1.json
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
import _targets  # noqa: E402
from _records import OneLineParser, positive_int, positive_seconds  # noqa: E402

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402
from learning.correctness import compare_all, output_labels  # noqa: E402

SCRIPT = "external_baselines"
SEED = 20_240
TRAIN_OPS = ("softmax_train", "rmsnorm_train")
TRAIN_SHAPE, TRAIN_DTYPE = (16384, 4096), torch.float16
GEMM_CASES = (
    ((8192, 8192, 8192), torch.bfloat16),
    ((4096, 4096, 4096), torch.float16),
    ((16384, 1024, 1024), torch.float16),
)
AUTOTUNE_MODE = "max-autotune-no-cudagraphs"

REFERENCE = "reference"
EAGER = "torch eager"
COMPILE = "torch.compile"
LIGER = "liger"
MM = "torch.mm"
AUTOTUNE = "torch.compile max-autotune"
BEST_GEMM = "best of torch.mm, max-autotune"

# op -> (what the reference is compared with, the speed-up it should reach): scripts/_targets.py
TARGETS: dict[str, tuple[tuple[str, float], ...]] = {
    **{op: ((COMPILE, speedup), (LIGER, _targets.TRAINING_SPEEDUP_VS_LIGER[op]))
       for op, speedup in _targets.TRAINING_SPEEDUP_VS_COMPILE.items()},
    "matmul": ((BEST_GEMM, _targets.GEMM_SPEEDUP),),
}  # fmt: skip

# Liger's fused add-RMSNorm options closest to the registry's semantics (see the docstring).
LIGER_RMSNORM_OPTIONS = {"offset": 0.0, "casting_mode": "gemma", "in_place": False}
LIGER_NOTES = {
    "softmax_train": "Liger softmax: computes in the storage dtype (reference: fp32)",
    "rmsnorm_train": "Liger fused add-RMSNorm (gemma, offset 0): h rounded to fp16; "
    "also writes h and reads a zero dh in backward",
}


# --------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    op: str
    shape: tuple[int, ...]
    dtype: torch.dtype

    @property
    def key(self) -> str:
        return f"{self.op}-{'x'.join(map(str, self.shape))}-{ops.dtype_name(self.dtype)}"

    @property
    def label(self) -> str:
        return f"{self.op} {'x'.join(map(str, self.shape))} {ops.dtype_name(self.dtype)}"

    @property
    def training(self) -> bool:
        return ops.get(self.op).training


def build_cases() -> tuple[Case, ...]:
    """Every case, each a shape and dtype that the registry itself measures the op at."""
    wanted = [(op, TRAIN_SHAPE, TRAIN_DTYPE) for op in TRAIN_OPS]
    wanted += [("matmul", shape, dtype) for shape, dtype in GEMM_CASES]
    cases = []
    for op, shape, dtype in wanted:
        spec = ops.get(op)
        if tuple(shape) not in spec.default_shapes or dtype not in spec.dtypes:
            raise RuntimeError(f"{op} {shape} {dtype} is no longer among the registry's cases")
        cases.append(Case(op, spec.validate_shape(shape), dtype))
    return tuple(cases)


def select_cases(names: list[str] | None) -> list[Case]:
    """The cases ``names`` stand for (``all``, an op name, a case key), in the canonical order."""
    cases = build_cases()
    if not names:
        return list(cases)
    chosen: set[str] = set()
    for name in names:
        matching = [c.key for c in cases if name in ("all", c.op, c.key)]
        if not matching:
            choices = ", ".join(
                ["all", *dict.fromkeys(c.op for c in cases), *(c.key for c in cases)]
            )
            raise ValueError(f"unknown case {name!r}; choose from {choices}")
        chosen.update(matching)
    return [c for c in cases if c.key in chosen]


# --------------------------------------------------------------------------- Liger


@dataclass(frozen=True)
class Liger:
    version: str
    softmax: Any  # LigerSoftmaxFunction (an autograd.Function)
    fused_add_rmsnorm: Any  # LigerFusedAddRMSNormFunction


def load_liger() -> tuple[Liger | None, str]:
    """Liger's Triton kernels and a status line; ``(None, why)`` when it does not import.

    The classes come from their modules (``liger_kernel.ops.softmax`` ...): those are Liger's
    Triton implementations, whatever backend its dispatcher would pick for the package names."""
    try:
        from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction
        from liger_kernel.ops.softmax import LigerSoftmaxFunction
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] == "liger_kernel":
            return None, "not installed"
        return None, f"import failed: {_one_line(error)}"
    except Exception as error:  # a broken install is reported, never fatal
        return None, f"import failed: {_one_line(error)}"
    try:
        from importlib.metadata import version

        found = version("liger_kernel")
    except Exception:
        found = "unknown version"
    return Liger(found, LigerSoftmaxFunction, LigerFusedAddRMSNormFunction), f"liger-kernel {found}"


def liger_rmsnorm_arguments(x, residual, weight, eps) -> tuple:
    """The registry's ``rmsnorm(x, residual, weight, eps)`` as the positional arguments of
    ``LigerFusedAddRMSNormFunction.apply(X, R, W, eps, offset, casting_mode, in_place)``."""
    options = LIGER_RMSNORM_OPTIONS
    return (
        x,
        residual,
        weight,
        eps,
        options["offset"],
        options["casting_mode"],
        options["in_place"],
    )


def liger_function(op: str, liger: Liger) -> Callable[..., torch.Tensor]:
    """Liger's kernel with the registry's signature for ``op``: what ``spec.call`` invokes."""
    if op == "softmax_train":

        def softmax(x):
            return liger.softmax.apply(x)

        return softmax
    if op == "rmsnorm_train":

        def rmsnorm(x, residual, weight, eps):
            y, _new_residual = liger.fused_add_rmsnorm.apply(
                *liger_rmsnorm_arguments(x, residual, weight, eps)
            )
            return y  # the registry's op returns y only; h's gradient is autograd's zeros

        return rmsnorm
    raise ValueError(f"no Liger kernel for {op}")


# --------------------------------------------------------------------------- ratios, targets


def _timed(row: dict) -> bool:
    return bool(row.get("ms")) and not row.get("failure")


def add_ratios(rows: list[dict]) -> None:
    """``ratio`` = the best oracle-passing baseline's ms / this row's ms (> 1: faster);
    ``reference_speedup`` (baseline rows) = this baseline's ms / the reference's ms."""
    for case in dict.fromkeys(r["case"] for r in rows):
        of_case = [r for r in rows if r["case"] == case]
        baselines = [r["ms"] for r in of_case if r["variant"] != REFERENCE and _timed(r)]
        best = min(baselines) if baselines else None
        reference = next((r for r in of_case if r["variant"] == REFERENCE and _timed(r)), None)
        for r in of_case:
            r["ratio"] = best / r["ms"] if best and r.get("ms") else None
            timed_baseline = r["variant"] != REFERENCE and r.get("ms") and reference
            r["reference_speedup"] = r["ms"] / reference["ms"] if timed_baseline else None


def _baseline_ms(of_case: list[dict], versus: str) -> tuple[float | None, str]:
    names = (MM, AUTOTUNE) if versus == BEST_GEMM else (versus,)
    found = [r for r in of_case if r["variant"] in names]
    timed = [r for r in found if _timed(r)]
    if timed:
        best = min(timed, key=lambda r: r["ms"])
        missing = [n for n in names if n not in {r["variant"] for r in timed}]
        return best["ms"], (f"{best['variant']}; without {', '.join(missing)}" if missing
                            else best["variant"])  # fmt: skip
    failing = [r for r in found if r.get("ms")]
    if failing:  # timed, but it fails the oracle: the ratio is shown, not judged
        return failing[0]["ms"], f"{failing[0]['variant']} fails the oracle"
    why = "; ".join(r.get("failure") or r.get("note") or "not timed" for r in found)
    return None, f"{versus}: {why or 'not measured'}"


def target_checks(rows: list[dict]) -> list[dict]:
    """Per case and target: the reference's speed-up over the baseline, and whether it is met
    (``None`` when either side was not timed or the baseline fails the oracle)."""
    checks = []
    for case in dict.fromkeys(r["case"] for r in rows):
        of_case = [r for r in rows if r["case"] == case]
        op = of_case[0]["op"]
        reference = next((r for r in of_case if r["variant"] == REFERENCE), None)
        for versus, target in TARGETS.get(op, ()):
            baseline_ms, basis = _baseline_ms(of_case, versus)
            ratio = None
            if reference is not None and _timed(reference) and baseline_ms:
                ratio = baseline_ms / reference["ms"]
            judged = ratio is not None and "fails the oracle" not in basis
            checks.append({
                "case": case, "versus": versus, "target": target, "ratio": ratio,
                "met": (ratio >= target) if judged else None, "basis": basis,
            })  # fmt: skip
    return checks


# --------------------------------------------------------------------------- measuring


def _one_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0][:160] if text else ''}"


def _check(spec: ops.OpSpec, outputs, expected, dtype) -> tuple[str, float | None]:
    verdicts = compare_all(
        tuple(outputs), expected, spec.tolerances[dtype], dtype=dtype, labels=output_labels(spec)
    )
    used = [v.tolerance_used for v in verdicts if v.tolerance_used is not None]
    return "; ".join(v.reason for v in verdicts if not v.passed), (max(used) if used else None)


def _row(case: Case, variant: str, note: str = "") -> dict:
    return {
        "case": case.label, "key": case.key, "op": case.op, "variant": variant, "ms": None,
        "rate": None, "unit": "TB/s" if case.training else "TFLOP/s", "failure": "",
        "tolerance_used": None, "first_call_s": None, "note": note, "ratio": None,
    }  # fmt: skip


def prepare(case: Case, variant: str, make: Callable, inputs, expected, note: str = ""):
    """Build the variant, call it once (compiles) and check it; its row and its timed call
    (``None``: not to be timed, a reference that fails or a variant that did not run)."""
    spec = ops.get(case.op)
    row = _row(case, variant, note)
    try:
        started = time.perf_counter()
        fn = make()
        outputs = spec.call(fn, inputs)
        torch.cuda.synchronize()
        row["first_call_s"] = round(time.perf_counter() - started, 2)
        row["failure"], row["tolerance_used"] = _check(spec, outputs, expected, case.dtype)
        del outputs
    except Exception as error:  # a baseline that does not compile or run is a result
        row["failure"] = _one_line(error)
        return row, None
    if row["failure"] and variant == REFERENCE:
        return row, None
    return row, (lambda: spec.call(fn, inputs))


def time_case(
    case: Case, prepared: list[tuple[dict, Callable | None]], rounds: int, seed: int = 0
) -> list[dict]:
    """Time every runnable variant of one case interleaved (``interleaved_graph_ms``); rows."""
    calls = {row["variant"]: call for row, call in prepared if call is not None}
    try:
        medians = timing.interleaved_graph_ms(calls, rounds=rounds, seed=seed) if calls else {}
    except Exception as error:  # a capture that fails is reported on every row of the case
        medians = {}
        for row, _ in prepared:
            row["failure"] = row["failure"] or f"timing failed: {_one_line(error)}"
    spec = ops.get(case.op)
    rows = []
    for row, _ in prepared:
        row["ms"] = medians.get(row["variant"])
        if row["ms"] and case.training:
            row["rate"] = timing.terabytes_per_second(spec.logical_bytes(case.shape, case.dtype),
                                                      row["ms"])  # fmt: skip
        elif row["ms"]:
            row["rate"] = spec.flops(case.shape) / (row["ms"] * 1e-3) / 1e12
        rows.append(row)
    return rows


def _mm(a, b):
    return torch.mm(a, b)


def max_autotune_mm() -> Callable:
    """``torch.compile(torch.mm)`` with Inductor's GEMM autotuning, fresh for one shape."""
    torch._dynamo.reset()
    return torch.compile(_mm, mode=AUTOTUNE_MODE, dynamic=False)


def train_case(
    case: Case, liger: Liger | None, liger_status: str, rounds: int, seed: int = 0
) -> list[dict]:
    spec = ops.get(case.op)
    inputs = spec.inputs(case.shape, case.dtype, SEED, device="cuda")
    expected = spec.expected(inputs)
    first_name, first = next(iter(spec.baselines.items()))
    prepared = [
        prepare(case, REFERENCE, lambda: spec.kernel_function("reference"), inputs, expected),
        prepare(case, EAGER, lambda: first, inputs, expected, f"registry baseline {first_name}"),
        prepare(case, COMPILE, lambda: timing.fresh_compile(first), inputs, expected,
                f"compile of {first_name}, dynamic=False"),
    ]  # fmt: skip
    if liger is None:
        prepared.append((_row(case, LIGER, f"Liger {liger_status}"), None))
    else:
        prepared.append(prepare(case, LIGER, lambda: liger_function(case.op, liger), inputs,
                                expected, LIGER_NOTES[case.op]))  # fmt: skip
    return time_case(case, prepared, rounds, seed)


def gemm_case(
    case: Case, autotune: bool, autotune_note: str, rounds: int, seed: int = 0
) -> list[dict]:
    spec = ops.get(case.op)
    inputs = spec.inputs(case.shape, case.dtype, SEED, device="cuda")
    expected = spec.expected(inputs)
    prepared = [
        prepare(case, REFERENCE, lambda: spec.kernel_function("reference"), inputs, expected),
        prepare(case, MM, lambda: spec.baselines["torch"], inputs, expected, "cuBLAS"),
    ]
    if autotune:
        prepared.append(prepare(case, AUTOTUNE, max_autotune_mm, inputs, expected,
                                AUTOTUNE_MODE))  # fmt: skip
    else:
        prepared.append((_row(case, AUTOTUNE, autotune_note), None))
    return time_case(case, prepared, rounds, seed)


# --------------------------------------------------------------------------- output


def print_table(rows: list[dict], checks: list[dict]) -> None:
    print(f"{'case':<34} {'variant':<27} {'ms':>8} {'rate':>13} {'vs best':>7} {'ref x':>6} "
          f"{'1st call s':>10}  note")  # fmt: skip
    for r in rows:
        rate = f"{r['rate']:.2f} {r['unit']}" if r["unit"] == "TB/s" and r["rate"] else (
            f"{r['rate']:.0f} {r['unit']}" if r["rate"] else "-")  # fmt: skip
        ratio = f"{r['ratio']:.3f}" if r["ratio"] else "-"
        speedup = f"{r['reference_speedup']:.3f}" if r.get("reference_speedup") else "-"
        note = "; ".join(x for x in (r["failure"], r["note"]) if x)
        first = timing.fmt(r["first_call_s"], ".1f")
        print(f"{r['case']:<34} {r['variant']:<27} {timing.fmt(r['ms']):>8} {rate:>13} "
              f"{ratio:>7} {speedup:>6} {first:>10}  {note}")  # fmt: skip
    print()
    print(f"{'case':<34} {'reference vs':<32} {'ratio':>6} {'target':>7}  verdict")
    for c in checks:
        ratio = f"{c['ratio']:.3f}" if c["ratio"] else "-"
        verdict = {True: "met", False: "MISSED", None: "not judged"}[c["met"]]
        print(f"{c['case']:<34} {c['versus']:<32} {ratio:>6} {c['target']:>6.2f}x  "
              f"{verdict} ({c['basis']})")  # fmt: skip


def parse_args(argv=None) -> tuple[argparse.Namespace, list[Case]]:
    parser = OneLineParser(prog=SCRIPT, description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", metavar="CASE",
                        help="all (default), an op (softmax_train, rmsnorm_train, matmul) or a "
                             "case key such as matmul-4096x4096x4096-float16")  # fmt: skip
    parser.add_argument("--no-autotune", action="store_true",
                        help="skip torch.compile max-autotune for the GEMMs")  # fmt: skip
    parser.add_argument("--autotune-budget-s", type=positive_seconds, default=300.0,
                        help="start no max-autotune compile once the run is past this many "
                             "seconds (default 300)")  # fmt: skip
    parser.add_argument("--rounds", type=positive_int, default=5,
                        help="timing rounds per case; each times every variant once, in a "
                             "shuffled order (default 5)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the shuffled order of the rounds (default 0)")
    parser.add_argument("--output", help="write the JSON (a script record) here")
    args = parser.parse_args(argv)
    try:
        cases = select_cases(args.cases)
    except ValueError as error:
        parser.error(str(error))
    return args, cases


def main(argv=None) -> int:
    args, cases = parse_args(argv)
    timing.require_gpu(f"{SCRIPT}.py")
    ops.numerics_policy()
    started = time.perf_counter()
    timing.warm_gpu()
    liger, liger_status = (None, "not needed")
    if any(c.op in TRAIN_OPS for c in cases):
        liger, liger_status = load_liger()
        print(f"Liger: {liger_status}", flush=True)
    rows: list[dict] = []
    for case in cases:
        if case.training:
            rows += train_case(case, liger, liger_status, args.rounds, args.seed)
        else:
            elapsed = time.perf_counter() - started
            autotune = not args.no_autotune and elapsed < args.autotune_budget_s
            budget = f"skipped: run past --autotune-budget-s {args.autotune_budget_s:g}"
            note = "skipped (--no-autotune)" if args.no_autotune else budget
            rows += gemm_case(case, autotune, note, args.rounds, args.seed)
        print(f"  {case.label} done at {time.perf_counter() - started:.0f} s", flush=True)
    add_ratios(rows)
    checks = target_checks(rows)
    seconds = round(time.perf_counter() - started, 1)
    print()
    print_table(rows, checks)
    print(
        f"{seconds:.0f} s. ms: every graph captured first, then the median of "
        f"{args.rounds} rounds x {timing.REPLAYS_PER_ROUND} CUDA-graph replays in a shuffled "
        "order (warm L2); ratio: best "
        "oracle-passing baseline's ms / ms; rate: the registry's logical bytes or FLOPs."
    )
    payload = {
        "script": f"{SCRIPT}.py", "environment": timing.environment(),
        "cases": [c.key for c in cases], "liger": liger_status,
        "liger_rmsnorm_options": LIGER_RMSNORM_OPTIONS, "liger_notes": LIGER_NOTES,
        "autotune_mode": None if args.no_autotune else AUTOTUNE_MODE,
        "rounds": args.rounds, "rows": rows, "targets": checks, "seconds": seconds,
    }  # fmt: skip
    timing.write_json(args.output, payload, script=__file__, argv=argv)
    return 1 if any(r["variant"] == REFERENCE and r["failure"] for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
