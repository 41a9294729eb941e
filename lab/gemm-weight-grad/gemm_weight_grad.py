"""The weight gradient dB = A^T dC: the rows kernel against the persistent kernel (GPU only, ~60 s)

    python3 lab/gemm-weight-grad/gemm_weight_grad.py --output results/h200/gemm-weight-grad.json

For each ``matmul_train`` shape of the registry (fp16), timed interleaved under CUDA-graph
replay after a float64 check of every output:

* dB alone, four ways: the classic rows kernel under the split rule before this change
  (``rows, before``: a 1023 x 1999 weight, 128 tiles, ran as one slice of fp32 partials and a
  summing kernel), the same kernel on operands copied to 16-byte aligned rows (``rows,
  aligned``), the persistent kernel with the weight's sizes compile-time and the token count
  at run time on aligned operands (``persistent rows``: ``_matmul_persistent_rows_kernel``),
  and ``torch.mm(a.T, dC)``;
* the whole step (forward, dA, dB, without autograd): as it was before (``step, before``), as
  ``matmul_bwd`` runs it now (``step, now``), and through ``torch.mm`` three times.

The two ``step`` candidates that run the same kernels at 16384 x 1024 x 1024 (where dB is split
before and now) are an A/A comparison: their difference is the method's, not the code's.
``--seed`` changes the shuffled order of the rounds, so that a repeat run can tell a position
effect from a kernel's.

The split rule routes a 16-bit dB to the persistent kernel when its output has more than
half as many tiles as the GPU has SMs (no split could give every tile two slices in one
wave); the table shows where that line should be.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))  # the shared helpers

import _gpu_timing as timing  # noqa: E402  (imports learning first: it selects the backend)
from _records import OneLineParser, positive_int  # noqa: E402

# isort: split
import torch  # noqa: E402

from learning import ops  # noqa: E402
from reference.kernels import matmul as gemm  # noqa: E402

DTYPE = torch.float16
SEED = 20_240
ATOL, RTOL = 4e-2, 1.6e-2  # as tune_gemm.py checks dB (fp16 products summed over M in fp32)


def splits_before(m: int, n: int, k: int, device) -> int | None:
    """The split rule before this change: no slices only when the tiles alone fill the SMs."""
    sms, tiles = gemm._sm_count(device), -(-m // 128) * -(-n // 128)
    if tiles >= sms:
        return None
    return max(1, min(gemm.MAX_SPLITS, sms // tiles, k // gemm.MIN_SPLIT_LENGTH))


def weight_grad_calls(a: torch.Tensor, grad_c: torch.Tensor) -> dict:
    m, k = a.shape
    n = grad_c.shape[1]
    before = splits_before(k, n, m, a.device)
    rows = gemm._matmul_rows_kernel
    return {
        "dB rows, before": lambda: gemm._launch(rows, a.T, grad_c, before),
        "dB rows, aligned": lambda: gemm._launch(
            rows, gemm._with_aligned_rows(a.T), gemm._with_aligned_rows(grad_c), before
        ),
        "dB persistent rows": lambda: gemm._launch_persistent(
            a.T, grad_c, gemm._matmul_persistent_rows_kernel
        ),
        "dB torch.mm": lambda: torch.mm(a.T, grad_c),
    }


def step_calls(a: torch.Tensor, b: torch.Tensor, grad_c: torch.Tensor) -> dict:
    m, k = a.shape
    n = b.shape[1]
    before = splits_before(k, n, m, a.device)

    def step_before():
        c = gemm.matmul_fwd(a, b)
        grad_a = gemm._launch_persistent(grad_c, b.T)
        return c, grad_a, gemm._launch(gemm._matmul_rows_kernel, a.T, grad_c, before)

    def step_now():
        return gemm.matmul_fwd(a, b), *gemm.matmul_bwd(grad_c, a, b)

    def step_torch():
        return torch.mm(a, b), torch.mm(grad_c, b.T), torch.mm(a.T, grad_c)

    return {"step, before": step_before, "step, now": step_now, "step torch.mm": step_torch}


def check(outputs, expected) -> str:
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    for name, got, want in zip(("C", "dA", "dB")[-len(outputs):], outputs, expected[-len(outputs):],
                               strict=True):  # fmt: skip
        if not torch.allclose(got.double(), want, atol=ATOL, rtol=RTOL):
            error = (got.double() - want).abs().max().item()
            return f"{name} differs from the float64 product (max error {error:.3g})"
    return ""


def time_case(shape, rounds: int, seed: int) -> list[dict]:
    spec = ops.get("matmul_train")
    inputs = spec.inputs(shape, DTYPE, SEED, device="cuda")
    a, b, grad_c = inputs["a"].detach(), inputs["b"].detach(), inputs["grad_output"]
    a64, b64, g64 = a.double(), b.double(), grad_c.double()
    expected = (a64 @ b64, g64 @ b64.T, a64.T @ g64)
    m, n, k = shape
    rows, calls = [], {}
    for label, call in {**weight_grad_calls(a, grad_c), **step_calls(a, b, grad_c)}.items():
        failure = check(call(), expected)
        rows.append({"case": spec.shape_label(shape), "candidate": label, "failure": failure})
        if not failure:
            calls[label] = call
    medians = timing.interleaved_graph_ms(calls, rounds=rounds, seed=seed)
    db_flops, step_flops = 2 * m * n * k, spec.flops(shape)
    for row in rows:
        ms = medians.get(row["candidate"])
        flops = step_flops if row["candidate"].startswith("step") else db_flops
        row["ms"] = ms
        row["tflops"] = flops / (ms * 1e-3) / 1e12 if ms else None
    for prefix in ("dB", "step"):
        torch_ms = medians.get(f"{prefix} torch.mm")
        for row in rows:
            if row["candidate"].startswith(prefix) and torch_ms and row["ms"]:
                row["vs_torch"] = torch_ms / row["ms"]
    splits = gemm._split_k(k, n, m, a.device)
    for row in rows:
        row["rule"] = "persistent" if splits is None else f"rows, {splits} slices"
    return rows


def print_table(rows: list[dict]) -> None:
    print(f"{'case':<16} {'candidate':<20} {'ms':>8} {'TFLOP/s':>8} {'x torch':>8}  rule / note")
    for r in rows:
        note = r["failure"] or f"dB now: {r['rule']}"
        print(f"{r['case']:<16} {r['candidate']:<20} {timing.fmt(r['ms']):>8} "
              f"{timing.fmt(r['tflops'], '.0f'):>8} {timing.fmt(r.get('vs_torch'), '.3f'):>8}  "
              f"{note}")  # fmt: skip


def main(argv=None) -> int:
    parser = OneLineParser(prog="gemm_weight_grad", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive_int, default=7,
                        help="interleaved rounds, one sample of every candidate each (default 7)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the shuffled order of each round (default 0): a repeat run "
                             "with another seed tells the order from the kernels")
    parser.add_argument("--output", help="write the rows as JSON here")
    args = parser.parse_args(argv)
    timing.require_gpu("gemm_weight_grad.py")
    ops.numerics_policy()
    timing.warm_gpu()
    rows = []
    for shape in ops.get("matmul_train").default_shapes:
        rows += time_case(shape, args.rounds, args.seed)
    print_table(rows)
    print(f"order of the rounds: seed {args.seed}")
    payload = {"environment": timing.environment(), "seed": args.seed, "rows": rows}
    timing.write_json(args.output, payload, script=__file__, argv=argv)
    return 1 if any(r["failure"] for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
