#!/usr/bin/env bash
# How the script outputs recorded before scripts wrote fingerprints got theirs (see NOTES.md):
# each file list is what the script imported in the commit's tree (checked by importing it
# there), and the commit is the tree the run received. Run once, from the repository root.
set -euo pipefail
A="python scripts/attach_fingerprint.py"
D=2026-11-29
CORE="learning/__init__.py learning/correctness.py learning/ops.py learning/runtime.py"
PKG="reference/__init__.py reference/kernels/__init__.py"
K="$PKG reference/kernels/add.py reference/kernels/matmul.py reference/kernels/reductions.py reference/kernels/rmsnorm.py reference/kernels/row_plan.py reference/kernels/softmax.py"
BENCH="learning/bench/__init__.py learning/bench/config.py learning/bench/engine.py learning/bench/machine.py learning/bench/output.py learning/bench/record.py learning/bench/schedule.py learning/bench/timers.py learning/bench/variants.py learning/report/__init__.py learning/report/fingerprint.py learning/report/validate.py"
H=results/h200
# First GPU call: the tree of 69ed1ad.
$A $H/validate-kernels-initial.json --commit 69ed1ad --script scripts/validate_kernels.py --files $CORE $K --argv "--output /tmp/o/validate-kernels.json" --recorded-at $D
$A $H/row-plan-sweep-initial.json --commit 69ed1ad --script scripts/validate_kernels.py --files $CORE $K --argv "--ops sum,softmax,softmax_train --dtypes float16 --no-timing --sweep-plans --output /tmp/o/row-plan-sweep.json" --recorded-at $D
for f in $H/cuda-softmax-*-run*.json; do
    $A "$f" --commit 69ed1ad --script scripts/cuda_runs.py --files cuda/softmax.cu cuda/softmax_kernels.cuh cuda/Makefile --argv "--runs 3 --output-dir /tmp/o/cuda --log /tmp/o/cuda-softmax-runs.log" --recorded-at $D
done
# The evidence calls: the tree of 3fbd79a.
$A $H/validate-kernels.json --commit 3fbd79a --script scripts/validate_kernels.py --files $CORE $K --argv "--no-timing --output /tmp/ev2/validate-kernels.json" --recorded-at $D
$A $H/clock-probe.json --commit 3fbd79a --script scripts/gpu_clock_probe.py --files $CORE $BENCH --argv "--output /tmp/ev/clock-probe.json" --recorded-at $D
$A $H/stability.json --commit 3fbd79a --script scripts/benchmark_stability.py --files $CORE $BENCH $K learning/schemas/report-v2.json --argv "--sweeps 3 --output /tmp/ev3/stability.json" --recorded-at $D
$A $H/gemm-grouping.json --commit 3fbd79a --script scripts/gemm_grouping.py --files $CORE $PKG reference/kernels/matmul.py scripts/_gpu_timing.py --argv "--output /tmp/ev3/gemm-grouping.json" --recorded-at $D
$A $H/row-plan-grid.json --commit 3fbd79a --script scripts/row_plan_grid.py --files $CORE $PKG reference/kernels/reductions.py reference/kernels/row_plan.py reference/kernels/softmax.py scripts/_gpu_timing.py --argv "--output /tmp/ev3/row-plan-grid.json" --recorded-at $D
# The tuning call: the tree of 85fbdf1, except two kernel files edited after the run and before
# that commit. Their measured content is 85fbdf1's with those edits undone (RECON below).
RECON=${RECON:?set RECON to the folder holding matmul_measured.py and rmsnorm_measured.py}
NOTE="reference/kernels/matmul.py and rmsnorm.py were edited after this run and before 85fbdf1 by three text replacements each (pruned configs and split-K rule; the EVICT_ROWS rule); their measured content is 85fbdf1's with those replacements undone, a reconstruction checked to redo to 85fbdf1 byte for byte (see results/NOTES.md)"
M="--measured reference/kernels/matmul.py=$RECON/matmul_measured.py reference/kernels/rmsnorm.py=$RECON/rmsnorm_measured.py"
$A $H/tune-gemm.json --commit 85fbdf1 --script scripts/tune_gemm.py --files $CORE $PKG scripts/_gpu_timing.py reference/kernels/matmul.py --argv "--output /tmp/o/tune-gemm.json" --recorded-at $D $M --note "$NOTE"
$A $H/tune-rows.json --commit 85fbdf1 --script scripts/tune_rows.py --files $CORE $PKG scripts/_gpu_timing.py reference/kernels/add.py reference/kernels/reductions.py reference/kernels/rmsnorm.py reference/kernels/row_plan.py reference/kernels/softmax.py --argv "--no-cold --output /tmp/o/tune-rows.json" --recorded-at $D $M --note "$NOTE"
$A $H/wrapper-overhead.json --commit 85fbdf1 --script scripts/wrapper_overhead.py --files $CORE $PKG scripts/_gpu_timing.py reference/kernels/row_plan.py reference/kernels/softmax.py --argv "--output /tmp/o/wrapper-overhead.json" --recorded-at $D
