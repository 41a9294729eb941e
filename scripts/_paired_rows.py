"""Candidates for one case, checked and timed interleaved against ``torch.compile``: the rows
and table the streaming probes print (``lab/streaming-gap/``) and ``row_sum_code.py``.

Every call is checked against the float64 oracle first; then all are timed interleaved, every
graph captured first (``_gpu_timing.interleaved_graph_samples``). Each row gives the ratio of
medians against compile and, pairing the samples of one round as ``score_targets.py`` does,
the paired ratio and the rounds lost to compile, with a sign test (GPU only).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import _gpu_timing as timing  # imports learning first: it selects the backend

# isort: split
import torch

from learning import ops
from learning.report.stats import paired


def paired_rows(op: str, shape, dtype, inputs: dict, calls: dict, rounds: int, seed: int):
    """Check every call against the float64 oracle, time them interleaved (graphs captured
    first), and give each a row: its median and rate, and its ratio against the call named
    ``compile``, as medians and paired by round."""
    spec = ops.get(op)
    for label, call in calls.items():
        if why := timing.oracle_check(spec, (call(),), inputs, dtype):
            raise SystemExit(f"{Path(sys.argv[0]).name}: {op} {label} fails the oracle: {why}")
    torch.cuda.synchronize()
    samples = timing.interleaved_graph_samples(calls, rounds=rounds, seed=seed)
    compile_ms = statistics.median(samples["compile"])
    case = f"{op} {spec.shape_label(shape)} {str(dtype).removeprefix('torch.')}"
    rows = []
    for label, values in samples.items():
        ms = statistics.median(values)
        versus = paired({"samples_ms": values}, {"samples_ms": samples["compile"]})
        tbps = timing.terabytes_per_second(spec.logical_bytes(shape, dtype), ms)
        rows.append({"case": case, "candidate": label, "ms": ms, "tbps": tbps,
                     "vs_compile": compile_ms / ms, "paired_vs_compile": versus})  # fmt: skip
    return rows


def print_table(rows: list[dict]) -> None:
    print(f"{'case':26} {'candidate':24} {'ms':>8} {'TB/s':>6} {'x compile':>9} {'paired':>7} "
          f"{'lost to compile':>15} {'p':>7}")  # fmt: skip
    for r in rows:
        versus = r["paired_vs_compile"]
        lost = f"{versus['slower']} of {versus['rounds']}" if versus else "-"
        print(f"{r['case']:26} {r['candidate']:24} {r['ms']:8.4f} {r['tbps']:6.2f} "
              f"{r['vs_compile']:9.3f} {versus['paired_ratio'] if versus else 0:7.3f} "
              f"{lost:>15} {versus['p'] if versus else 1:7.4f}")  # fmt: skip
    print("x compile: compile's median over the candidate's; paired: the median over rounds of "
          "the same quotient; lost to compile: rounds the candidate was slower, sign test p")
