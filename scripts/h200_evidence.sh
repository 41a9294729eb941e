#!/usr/bin/env bash
# The recorded H200 evidence, in two parts that each fit one 10-minute device call.
#   scripts/h200_evidence.sh sweeps  OUTDIR   all, all-cold, gemm-bf16, softmax-compiled,
#                                             softmax-events, clock probe, cold host-delay proof
#   scripts/h200_evidence.sh training OUTDIR  training, gemm-train, norm-compiled, validation
#   scripts/h200_evidence.sh explore OUTDIR   the GPU-only tests (fast launcher, L2-residency
#                                             cheat), read vs write flush, softmax variants,
#                                             row-plan grids, wrapper overhead, tolerance probe
#   scripts/h200_evidence.sh scripts OUTDIR   the L2-residency cheat, specialization sweep,
#                                             clock probe, external baselines (Liger-Kernel when
#                                             installed, Inductor max-autotune), compile overhead
#   scripts/h200_evidence.sh chunks OUTDIR    row_chunk_sweep for softmax and RMSNorm, twice
#   scripts/h200_evidence.sh final OUTDIR     the stale cases of all and all-cold on this card
#                                             (python -m learning.report rerecord: only what
#                                             changed since the card's last recording)
#   scripts/h200_evidence.sh final-training OUTDIR  the same for training, gemm-bf16,
#                                             gemm-train, validation; the wrapper cost and the
#                                             GPU-only tests of tests/reference
#   scripts/h200_evidence.sh final-rows OUTDIR      all, all-cold, training, validation, wrapper
#                                             cost, GPU tests
#   scripts/h200_evidence.sh final-gemm OUTDIR      gemm-bf16 and gemm-train
#   scripts/h200_evidence.sh final-scripts OUTDIR   external baselines (interleaved), the
#                                             RMSNorm plan grid, the compile-count GPU tests
#   RECORD="all training" scripts/h200_evidence.sh only OUTDIR   the named records alone
#   scripts/h200_evidence.sh gemm-ncu OUTDIR  the landed GEMM and cuBLAS at 16384x1024^2 under ncu
#                                             (gemm-ncu-4096: the same at 4096^3)
#   scripts/h200_evidence.sh row-sum-code OUTDIR the row sum's code against Inductor's, by rewrite
#   scripts/h200_evidence.sh gemm-regimes OUTDIR the Hopper GEMMs and cuBLAS, each alone, from
#                                             a rested GPU to its power limit (NVML); ncu; host
#   scripts/h200_evidence.sh gemm-group OUTDIR the cooperative kernel's GROUP_M, alone; ncu 4096^3
#   scripts/h200_evidence.sh heldout OUTDIR   shapes no plan was tuned on: the row ops, the vocabulary
#                                             softmax, the GEMM and the training ops, against eager
# The past experiments' device runs are in the lab, one script a question: lab/<question>/run.sh
# (lab/README.md). Each step's stdout/stderr goes to OUTDIR/<name>.log; a failed step is
# reported and the rest go on (scripts/evidence_steps.sh). Run from the repository root with
# the GPU image's python3 (kernel-bench = learning.bench).
set -uo pipefail
usage="usage: h200_evidence.sh sweeps|training|explore|scripts|chunks|final|final-training|final-rows|final-gemm|final-scripts|only|row-sum-code|gemm-regimes|gemm-group|gemm-ncu|gemm-ncu-4096|heldout OUTDIR"
part=${1:?$usage}
out=${2:?$usage}
# shellcheck source=scripts/evidence_steps.sh
source "$(dirname "$0")/evidence_steps.sh"
# The recorded sweeps (tests/results/ checks that they measured the landed files), by name.
record() {
    local name
    for name in "$@"; do
        case $name in
        # the recorded sweeps (learning/report/sweeps.py): only their stale cases, on this card
        all|all-cold|training|gemm-bf16|gemm-train|validate-kernels) step "$name" timeout 590 \
            python3 -m learning.report rerecord "$out" --sweep "$name" ;;
        wrapper-overhead) step wrapper-overhead timeout 120 python3 scripts/wrapper_overhead.py \
            --output "$out/wrapper-overhead.json" ;;
        gpu-tests) step gpu-tests timeout 120 python3 -m pytest -q -s -p no:cacheprovider \
            -m gpu tests/reference ;;
        # the GEMMs against Inductor's max-autotune, interleaved back to back
        external-baselines-gemm) step external-baselines-gemm timeout 200 python3 \
            scripts/external_baselines.py --cases matmul --autotune-budget-s 120 \
            --output "$out/external-baselines-gemm.json" ;;
        # the Hopper GEMMs and cuBLAS, each alone, rested and at the power limit
        gemm-regimes) step gemm-regimes timeout 300 python3 scripts/gemm_regimes.py \
            --output "$out/gemm-regimes.json" ;;
        *) echo "record: no sweep named $name" >&2; return 2 ;;
        esac
    done
}
case $part in
sweeps)
    step all bench --op all --dtype float16 $recorded --output "$out/all.json"
    step all-cold bench --op all --dtype float16 --cache cold $recorded --output "$out/all-cold.json"
    step gemm-bf16 bench --op matmul --dtype bfloat16 $recorded --output "$out/gemm-bf16.json"
    step softmax-compiled bench --op softmax --shape 1024 1024 --dtype float32 --compile \
        --output "$out/softmax-compiled.json"
    step softmax-events bench --op softmax --dtype float16 --timing events \
        --output "$out/softmax-events.json"
    step clock-probe python3 scripts/gpu_clock_probe.py --output "$out/clock-probe.json"
    for delay in 0 20; do
        step "cold-delay$delay" env KERNEL_BENCH_HOST_DELAY_US=$delay python3 -m learning.bench \
            --op softmax --shape 1024 1024 --dtype float16 --cache cold \
            --output "$out/cold-delay$delay.json"
    done
    ;;
training)
    step training bench --op training --dtype float16 --compile --output "$out/training.json"
    step gemm-train bench --op matmul_train --shape 16384 1024 1024 --dtype float16 \
        --output "$out/gemm-train.json"
    step norm-compiled bench --op rmsnorm --dtype float16 --compile --output "$out/norm-compiled.json"
    step validate-kernels python3 scripts/validate_kernels.py --no-timing \
        --output "$out/validate-kernels.json"
    ;;
explore)
    step gpu-tests python3 -m pytest -q -s -p no:cacheprovider tests/reference/test_launch.py \
        tests/adversarial/test_l2_residency.py
    for flush in read write; do
        step "all-cold-flush-$flush" bench --op all --dtype float16 --cache cold --flush $flush \
            --output "$out/all-cold-flush-$flush.json"
    done
    step wrapper-overhead python3 scripts/wrapper_overhead.py --output "$out/wrapper-overhead.json"
    for op in softmax sum softmax_bwd; do
        step "row-plan-grid-$op" python3 scripts/row_plan_grid.py --op $op \
            --output "$out/row-plan-grid-$op.json"
    done
    step tolerance-probe python3 scripts/tolerance_probe.py --output "$out/tolerance-probe.json"
    ;;
scripts)
    step l2-residency-cheat timeout 120 python3 -m pytest -q -s -p no:cacheprovider \
        tests/adversarial/test_l2_residency.py
    step specialization-sweep timeout 120 python3 scripts/specialization_sweep.py \
        --output "$out/specialization-sweep.json"
    step clock-probe timeout 90 python3 scripts/gpu_clock_probe.py --output "$out/clock-probe.json"
    step external-baselines-rows timeout 120 python3 scripts/external_baselines.py \
        --cases softmax_train rmsnorm_train --output "$out/external-baselines-rows.json"
    step compile-overhead timeout 240 python3 scripts/compile_overhead.py \
        --output "$out/compile-overhead.json"
    step external-baselines-gemm timeout 200 python3 scripts/external_baselines.py --cases matmul \
        --autotune-budget-s 120 --output "$out/external-baselines-gemm.json"
    ;;
chunks)
    step row-chunk-sweep timeout 200 python3 scripts/row_chunk_sweep.py \
        --ops softmax,rmsnorm,rmsnorm_bwd --repeat 2 --output "$out/row-chunk-sweep.json"
    ;;
final)
    record all all-cold
    ;;
final-training)
    record training gemm-bf16 gemm-train validate-kernels wrapper-overhead gpu-tests
    ;;
final-rows)
    # after a change that only the row kernels import (gemm-bf16 and gemm-train fingerprint
    # matmul.py alone and stay valid): the other recorded sweeps, the wrapper cost, GPU tests
    record all all-cold training validate-kernels wrapper-overhead gpu-tests
    ;;
final-gemm)
    record gemm-bf16 gemm-train
    ;;
final-scripts)
    step external-baselines-rows timeout 150 python3 scripts/external_baselines.py \
        --cases softmax_train rmsnorm_train --output "$out/external-baselines-rows.json"
    step external-baselines-gemm timeout 150 python3 scripts/external_baselines.py --cases matmul \
        --autotune-budget-s 100 --output "$out/external-baselines-gemm.json"
    step row-plan-grid-rmsnorm timeout 100 python3 scripts/row_plan_grid.py --op rmsnorm \
        --repeat 2 --output "$out/row-plan-grid-rmsnorm.json"
    step gpu-tests timeout 120 python3 -m pytest -q -s -p no:cacheprovider -k compiles \
        tests/reference/test_norm_gemm_kernels.py tests/reference/test_row_kernels.py
    ;;
heldout)
    # shapes that none of the registry's default or CPU shapes is and no plan was chosen on
    # (results/notes/heldout-shapes-predictions.md): warm, graph replay, against eager
    heldout="--samples 6 --visits 2"
    rows="--shape 8192 8192 --shape 32768 1024 --shape 131072 64 --shape 96 12288 --shape 7 100000"
    for op in sum softmax rmsnorm; do
        # shellcheck disable=SC2086  # one word an option
        step "heldout-$op" timeout 150 python3 -m learning.bench --op "$op" $rows $heldout \
            --output "$out/heldout-$op.json"
    done
    # shellcheck disable=SC2086
    step heldout-softmax-vocab timeout 60 python3 -m learning.bench --op softmax \
        --shape 2048 50257 $heldout --output "$out/heldout-softmax-vocab.json"
    # shellcheck disable=SC2086
    step heldout-matmul timeout 200 python3 -m learning.bench --op matmul --shape 2048 2048 2048 \
        --shape 1024 1024 1024 --shape 128 8192 8192 --shape 8192 8192 256 \
        --shape 5000 3000 7000 --shape 4096 11008 4096 $heldout \
        --output "$out/heldout-matmul.json"
    # shellcheck disable=SC2086
    step heldout-softmax-train timeout 120 python3 -m learning.bench --op softmax_train \
        --shape 8192 8192 --shape 96 12288 --dtype float16 $heldout \
        --output "$out/heldout-softmax-train.json"
    # shellcheck disable=SC2086
    step heldout-rmsnorm-train timeout 120 python3 -m learning.bench --op rmsnorm_train \
        --shape 8192 8192 --shape 96 12288 --dtype float16 $heldout \
        --output "$out/heldout-rmsnorm-train.json"
    ;;
only)
    # some of the records, to split a re-record over calls: RECORD="all training" ... only OUT
    # shellcheck disable=SC2086  # one word a record
    record ${RECORD:?set RECORD to the records to run}
    ;;
row-sum-code)
    # the row sum's last gap to Inductor: the rewrites from the version before the change,
    # Inductor's own kernel, each difference left out, the hint alone (seeds 2, 3, 4; the
    # first two runs were made before --rewrites existed, with these rewrites), then the
    # landed kernels against that version (seed 5)
    step row-sum-code-run1 timeout 200 python3 scripts/row_sum_code.py --seed 2 \
        --rewrites "first chunk" "stride N" "no clamp" "every difference" \
        --output "$out/row-sum-code-run1.json"
    step row-sum-code-run2 timeout 240 python3 scripts/row_sum_code.py --seed 3 \
        --rewrites "first chunk" "stride N" "no clamp" "every difference" \
        "all but evict_first" "all but first chunk" "all but stride N" "all but no clamp" \
        --output "$out/row-sum-code-run2.json"
    step row-sum-code timeout 240 python3 scripts/row_sum_code.py --seed 4 --rounds 15 \
        --rewrites "evict_first" "evict_first+first chunk" "evict_first+no clamp" \
        "all but stride N" "every difference" --output "$out/row-sum-code.json"
    step row-sum-code-after timeout 200 python3 scripts/row_sum_code.py --seed 5 --rounds 15 \
        --rewrites "evict_first+first chunk" --output "$out/row-sum-code-after.json"
    ;;
gemm-regimes)
    # the landed GEMM (the cooperative kernel), the ping-pong kernel and cuBLAS, each alone,
    # from a rested GPU to the power limit (NVML over time); the three under Nsight Compute
    # at the gap shape
    step gemm-regimes timeout 300 python3 scripts/gemm_regimes.py \
        --output "$out/gemm-regimes.json"
    for variant in cooperative ping-pong torch.mm; do
        ncu_one "ncu-gemm-regimes-${variant/./}-16384x1024x1024" scripts/gemm_regimes.py \
            "$variant" 16384 1024 1024
    done
    ;;
gemm-group)
    # the cooperative kernel's grouped order (GROUP_M 4, 8, 16) and cuBLAS, each alone; the
    # kernel and cuBLAS under Nsight Compute at 4096^3, where it trails most when rested
    step gemm-regimes-group timeout 300 python3 scripts/gemm_regimes.py --group-m 4 8 16 \
        --seconds 1 --output "$out/gemm-regimes-group.json"
    for variant in cooperative torch.mm; do
        ncu_one "ncu-gemm-regimes-${variant/./}-4096x4096x4096" scripts/gemm_regimes.py \
            "$variant" 4096 4096 4096
    done
    ;;
gemm-ncu)
    # the landed cooperative kernel and cuBLAS, one call each under Nsight Compute
    for variant in cooperative torch.mm; do
        ncu_one "ncu-gemm-landed-${variant/./}-16384x1024x1024" scripts/gemm_regimes.py \
            "$variant" 16384 1024 1024
    done
    ;;
gemm-ncu-4096)
    # the same at 4096^3 fp16, where the kernel alone trails cuBLAS by about 1%
    for variant in cooperative torch.mm; do
        ncu_one "ncu-gemm-landed-${variant/./}-4096x4096x4096" scripts/gemm_regimes.py \
            "$variant" 4096 4096 4096
    done
    ;;
*) echo "unknown part $part" >&2; exit 2 ;;
esac
