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
#   scripts/h200_evidence.sh final OUTDIR     the recorded sweeps re-run on the landed code:
#                                             all and all-cold, every default shape and dtype
#   scripts/h200_evidence.sh final-training OUTDIR  training, gemm-bf16 (against Inductor
#                                             max-autotune), gemm-train, validation, wrapper
#                                             cost, the GPU-only tests of tests/reference
#   scripts/h200_evidence.sh final-rows OUTDIR      all, all-cold, training, validation, wrapper
#                                             cost, GPU tests: what a row-kernel change stales
#   scripts/h200_evidence.sh final-gemm OUTDIR      gemm-bf16 and gemm-train: what a change to
#                                             matmul.py alone stales (after final-rows)
#   scripts/h200_evidence.sh final-scripts OUTDIR   external baselines (interleaved), the
#                                             RMSNorm plan grid, the compile-count GPU tests
#   scripts/h200_evidence.sh probes OUTDIR    the launcher's GPU tests, the wrapper cost, the
#                                             streaming ceiling by read:write mix, the GEMM
#                                             with warp-specialized tilings
#   scripts/h200_evidence.sh row-mask OUTDIR  the RMSNorm forward's row mask probe, and its
#                                             versions under Nsight Compute (one launch each)
#   scripts/h200_evidence.sh gemm-graph OUTDIR the GEMM against torch.mm in graphs of two
#                                             lengths, each tiling pinned, the autotuner's pick
#   scripts/h200_evidence.sh weight-grad OUTDIR dB through the rows and persistent kernels,
#                                             and the training step before and now
#   scripts/h200_evidence.sh autotune-pick OUTDIR the GEMM autotuner's pick, default and warm
#   scripts/h200_evidence.sh streaming-fp32 OUTDIR fp32 add/sum/max against compile, under ncu
#   RECORD="all training" scripts/h200_evidence.sh only OUTDIR   the named records alone
#   scripts/h200_evidence.sh row-plan-cold OUTDIR the RMSNorm forward's row plans with a cold L2,
#                                             against compile and Inductor's pick (two seeds)
#   scripts/h200_evidence.sh row-plan-warm OUTDIR the plans of 1-2 rows on 1-8 warps at 1024 wide,
#                                             warm at three row counts and cold at 8192 rows
#   scripts/h200_evidence.sh rmsnorm-mask OUTDIR the one-row forward without its row mask at 1024^2
#                                             and 16384x4096, every dtype, warm and cold
#   scripts/h200_evidence.sh rmsnorm-mask-rule OUTDIR the forward's row-mask rule against the mask
#                                             everywhere, warm and cold; every case, switched
#   scripts/h200_evidence.sh cold-aa OUTDIR  kernel-bench's A/A test cold at 1024^2 and 65536x128
#                                             (warm-aa: the same, warm):
#                                             the reference as triton and as learner, 3 seeds
#   scripts/h200_evidence.sh rmsnorm-bwd OUTDIR the RMSNorm backward's variants, interleaved
#   scripts/h200_evidence.sh rmsnorm-wide-bwd OUTDIR the same on wide rows (the chunked path),
#                                             and the reference under ncu at 4096x32768
#   scripts/h200_evidence.sh rmsnorm-bwd-ncu OUTDIR the whole-row backward at 16384x4096, ncu
#   scripts/h200_evidence.sh gemm-ncu OUTDIR  the landed GEMM and cuBLAS at 16384x1024^2 under ncu
#                                             (gemm-ncu-4096: the same at 4096^3)
#   scripts/h200_evidence.sh rmsnorm-code OUTDIR the one-row forward with Inductor's code choices
#                                             (row_plan_cold.py --rewrites), warm and cold
#   scripts/h200_evidence.sh plans OUTDIR    streaming launch plans against compile; GEMM ws/clusters
#   scripts/h200_evidence.sh plans-ncu OUTDIR those plans under ncu; external-baselines-gemm
#   scripts/h200_evidence.sh row-sum-code OUTDIR the row sum's code against Inductor's, by rewrite
#   scripts/h200_evidence.sh evict-ncu OUTDIR  the eviction hint's kernels with and without it, ncu
#   scripts/h200_evidence.sh gemm-epilogue OUTDIR the GEMM over K with its store skipped; the
#                                             reference and cuBLAS at the two gap shapes, ncu
#   scripts/h200_evidence.sh gemm-regimes OUTDIR the Hopper GEMMs and cuBLAS, each alone, from
#                                             a rested GPU to its power limit (NVML); ncu; host
#   scripts/h200_evidence.sh gemm-group OUTDIR the cooperative kernel's GROUP_M, alone; ncu 4096^3
# Each step's stdout/stderr goes to OUTDIR/<name>.log; a failed step is reported and the rest go
# on. Run from the repository root with the GPU image's python3 (kernel-bench = learning.bench).
set -uo pipefail
usage="usage: h200_evidence.sh sweeps|training|explore|scripts|chunks|final|final-training|final-rows|final-gemm|final-scripts|probes|row-mask|gemm-graph|weight-grad|autotune-pick|streaming-fp32|plans|plans-ncu|row-sum-code|evict-ncu|gemm-epilogue|gemm-regimes|gemm-group|row-plan-cold|row-plan-warm|rmsnorm-code|gemm-ncu|gemm-ncu-4096|rmsnorm-mask|rmsnorm-mask-rule|cold-aa|warm-aa|rmsnorm-bwd|rmsnorm-wide-bwd|rmsnorm-bwd-ncu|only OUTDIR"
part=${1:?$usage}
out=${2:?$usage}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
bench() { python3 -m learning.bench "$@"; }
step() {
    local name=$1; shift
    local start=$SECONDS
    "$@" >"$out/$name.log" 2>&1
    echo "$name: exit $? in $((SECONDS - start)) s"
    # EVIDENCE_TAR=path: keep a tarball of everything so far, in case a later step is cut off
    if [ -n "${EVIDENCE_TAR:-}" ]; then tar czf "$EVIDENCE_TAR" -C "$(dirname "$out")" "$(basename "$out")"; fi
}
# One variant under Nsight Compute (SCRIPT --profile VARIANT --shape SIZES...: the script
# calls it once inside a profiler range), clocks left as they are. Only the metrics this ncu
# knows are asked for (an unknown name stops the whole profile).
ncu_one() {
    local name=$1 script=$2 variant=$3; shift 3
    local known metrics=gpu__time_duration.sum metric
    known=$(ncu --query-metrics 2>/dev/null | awk '{print $1}')
    for metric in launch__grid_size launch__block_size launch__registers_per_thread \
            launch__cluster_dim_x launch__cluster_dim_y launch__cluster_dim_z \
            lts__t_bytes.sum lts__t_sectors_op_read.sum lts__t_sectors_op_write.sum \
            lts__t_sectors_srcunit_tex_op_read.sum lts__t_sector_hit_rate.pct \
            lts__throughput.avg.pct_of_peak_sustained_elapsed dram__bytes_read.sum \
            dram__bytes_write.sum sm__throughput.avg.pct_of_peak_sustained_elapsed \
            sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed \
            sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed \
            sm__inst_executed_pipe_tensor_op_gmma.sum sm__cycles_elapsed.avg.per_second \
            lts__cycles_elapsed.avg.per_second smsp__cycles_active.avg; do
        grep -qx "${metric%%.*}" <<<"$known" && metrics=$metrics,$metric
    done
    metrics="$metrics,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
    step "$name" timeout 150 ncu --clock-control none --profile-from-start off \
        --metrics "$metrics" --section LaunchStats --section SpeedOfLight --csv \
        --print-units base python3 "$script" --profile "$variant" --shape "$@"
}
recorded="--samples 15 --visits 5"
# The recorded sweeps (tests/results/ checks that they measured the landed files), by name.
record() {
    local name
    for name in "$@"; do
        case $name in
        # every default shape and dtype, torch.compile per case (dynamic=False), warm and cold
        all) step all timeout 300 python3 -m learning.bench --op all --compile $recorded \
            --output "$out/all.json" ;;
        all-cold) step all-cold timeout 280 python3 -m learning.bench --op all --compile \
            --cache cold $recorded --output "$out/all-cold.json" ;;
        training) step training timeout 150 python3 -m learning.bench --op training \
            --dtype float16 --compile --output "$out/training.json" ;;
        gemm-bf16) step gemm-bf16 timeout 150 python3 -m learning.bench --op matmul \
            --dtype bfloat16 --compile --compile-mode max-autotune $recorded \
            --output "$out/gemm-bf16.json" ;;
        gemm-train) step gemm-train timeout 40 python3 -m learning.bench --op matmul_train \
            --shape 16384 1024 1024 --dtype float16 --output "$out/gemm-train.json" ;;
        validate-kernels) step validate-kernels timeout 300 python3 scripts/validate_kernels.py \
            --no-timing --output "$out/validate-kernels.json" ;;
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
    step tune-softmax python3 scripts/tune_rows.py --sections softmax --no-cold \
        --output "$out/tune-softmax.json"
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
only)
    # some of the records, to split a re-record over calls: RECORD="all training" ... only OUT
    # shellcheck disable=SC2086  # one word a record
    record ${RECORD:?set RECORD to the records to run}
    ;;
autotune-pick)
    # the GEMM autotuner's pick under its own benchmarker and under warm graph replay
    step gemm-autotune-pick timeout 200 python3 scripts/gemm_autotune_pick.py \
        --output "$out/gemm-autotune-pick.json"
    ;;
streaming-fp32)
    # one call of the reference and of torch.compile for the fp32 streaming cases compile wins
    # by under 1%, under Nsight Compute (clocks left as they are), with Inductor's code
    metrics=gpu__time_duration.sum,launch__grid_size,launch__block_size
    metrics=$metrics,launch__registers_per_thread,launch__waves_per_multiprocessor
    metrics=$metrics,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
    metrics=$metrics,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct
    metrics=$metrics,dram__throughput.avg.pct_of_peak_sustained_elapsed
    for op in add sum max; do
        for shape in 16384x4096 4096x32768; do
            for variant in reference compile; do
                step "ncu-fp32-$op-$shape-$variant" timeout 150 env TORCH_LOGS=output_code ncu \
                    --clock-control none --profile-from-start off --metrics "$metrics" --csv \
                    --print-units base python3 scripts/profile_streaming.py --op "$op" \
                    --shape "$shape" --dtype float32 --variant "$variant"
            done
        done
    done
    ;;
plans)
    # launch plans for the streaming cases compile wins by under 1%, paired against compile
    step streaming-plans timeout 300 python3 scripts/streaming_plans.py \
        --output "$out/streaming-plans.json"
    # the last two GEMM probes of the old method, on the capture-first interleaving
    step tune-gemm-ws-captured timeout 200 python3 scripts/tune_gemm.py --warp-specialize \
        --forward-only --output "$out/tune-gemm-ws-captured.json"
    step tune-gemm-clusters-captured timeout 200 python3 scripts/tune_gemm.py --clusters \
        --forward-only --output "$out/tune-gemm-clusters-captured.json"
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
evict-ncu)
    # the eviction hint's three kernels with and without it under Nsight Compute (clocks and
    # caches left as they are: the profiled call meets the L2 the calls before it left)
    metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
    metrics=$metrics,lts__t_sector_hit_rate.pct,dram__throughput.avg.pct_of_peak_sustained_elapsed
    for run in "sum float32 reference" "sum float32 rewritten sum before" \
               "add float32 reference" "add float32 rewritten add evict_first" \
               "rmsnorm float16 reference" "rmsnorm float16 rewritten rmsnorm hint always"; do
        read -r op dtype variant rewrite <<<"$run"
        name="ncu-evict-$op-$dtype-${rewrite:-reference}"
        step "${name// /-}" timeout 150 ncu --clock-control none --cache-control none \
            --profile-from-start off --metrics "$metrics" --section MemoryWorkloadAnalysis_Tables \
            --csv --print-units base python3 scripts/profile_streaming.py --op "$op" \
            --shape 16384x4096 --dtype "$dtype" --variant "$variant" ${rewrite:+--rewrite "$rewrite"}
    done
    ;;
plans-ncu)
    # the plans that won and lost in streaming-plans.log, under Nsight Compute (clocks left as
    # they are): what 32 warps change in a chunked row walk, what 4 KiB blocks change in add
    metrics=gpu__time_duration.sum,launch__grid_size,launch__block_size
    metrics=$metrics,launch__registers_per_thread,launch__occupancy_limit_registers
    metrics=$metrics,launch__waves_per_multiprocessor,smsp__inst_executed.sum
    metrics=$metrics,sm__warps_active.avg.pct_of_peak_sustained_active
    metrics=$metrics,dram__throughput.avg.pct_of_peak_sustained_elapsed
    metrics="$metrics,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
    while read -r op shape dtype plan; do
        name="ncu-plan-$op-$shape-$dtype-${plan// /-}"
        step "$name" timeout 120 ncu --clock-control none --profile-from-start off \
            --metrics "$metrics" --csv --print-units base python3 scripts/profile_streaming.py \
            --op "$op" --shape "$shape" --dtype "$dtype" --variant plan --plan "$plan"
    done <<'PLANS'
sum 4096x32768 float32 chunk 4096 w16
sum 4096x32768 float32 chunk 4096 w32
sum 4096x32768 float32 chunk 8192 w32
sum 4096x32768 float32 chunk 2048 w16
sum 4096x32768 float16 chunk 8192 w16
sum 4096x32768 float16 chunk 8192 w32
sum 4096x32768 float16 chunk 4096 w16
add 16384x4096 float32 block 4096 w8
add 16384x4096 float32 block 1024 w8
add 16384x4096 float32 block 1024 w4
add 16384x4096 float16 block 8192 w8
add 16384x4096 float16 block 2048 w8
PLANS
    step external-baselines-gemm timeout 200 python3 scripts/external_baselines.py --cases matmul \
        --autotune-budget-s 120 --output "$out/external-baselines-gemm.json"
    ;;
weight-grad)
    # dB through the rows kernel and the persistent one, and the whole step (matmul.py)
    step gemm-weight-grad timeout 150 python3 scripts/gemm_weight_grad.py \
        --output "$out/gemm-weight-grad.json"
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
probes)
    step gpu-tests-launch timeout 120 python3 -m pytest -q -s -p no:cacheprovider -m gpu \
        tests/reference/test_launch.py
    step wrapper-overhead-replay timeout 150 python3 scripts/wrapper_overhead.py \
        --output "$out/wrapper-overhead-replay.json"
    step stream-ceiling timeout 90 python3 scripts/stream_ceiling.py \
        --output "$out/stream-ceiling.json"
    step tune-gemm-ws timeout 300 python3 scripts/tune_gemm.py --warp-specialize --forward-only \
        --output "$out/tune-gemm-ws.json"
    ;;
gemm-epilogue)
    # the reference, torch.mm and the reference with its store skipped, over K, interleaved
    step gemm-epilogue timeout 240 python3 scripts/gemm_epilogue.py \
        --output "$out/gemm-epilogue.json"
    # the reference and cuBLAS at the two gap shapes under Nsight Compute (clocks left as they
    # are): clusters, L2 and DRAM traffic, the tensor pipe's busy share, stall reasons
    for run in "16384 1024 1024" "4096 4096 4096"; do
        for variant in reference torch.mm; do
            ncu_one "ncu-gemm-${variant/./}-${run// /x}" scripts/gemm_epilogue.py "$variant" \
                $run
        done
    done
    ;;
gemm-regimes)
    # the landed GEMM (the cooperative kernel), the ping-pong kernel and cuBLAS, each alone,
    # from a rested GPU to the power limit (NVML over time); the three under Nsight Compute
    # at the gap shape; the Hopper kernel's host time taken apart
    step gemm-regimes timeout 300 python3 scripts/gemm_regimes.py \
        --output "$out/gemm-regimes.json"
    for variant in cooperative ping-pong torch.mm; do
        ncu_one "ncu-gemm-regimes-${variant/./}-16384x1024x1024" scripts/gemm_regimes.py \
            "$variant" 16384 1024 1024
    done
    step gemm-pingpong-host timeout 120 python3 scripts/gemm_pingpong.py --host-profile \
        --output "$out/gemm-pingpong-host.json"
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
row-plan-cold)
    # the cold RMSNorm forward at 1024^2 and 65536x128: every whole-row plan, compile (and the
    # config Inductor picked), eager; two visit orders
    for seed in 0 1; do
        step "row-plan-cold-seed$seed" timeout 200 python3 scripts/row_plan_cold.py --seed "$seed" \
            --output "$out/row-plan-cold-seed$seed.json"
    done
    ;;
row-plan-warm)
    # do the one-row plans on few warps that tie compile cold at 1024^2 cost the warm case?
    narrow="--rows 1 2 --warps 1 2 4 8 --dtypes float32 float16"
    # shellcheck disable=SC2086  # the plan arguments are words
    step row-plan-warm timeout 300 python3 scripts/row_plan_cold.py --cache warm $narrow \
        --shapes 1024x1024 8192x1024 65536x1024 --output "$out/row-plan-warm.json"
    # shellcheck disable=SC2086
    step row-plan-cold-8192 timeout 200 python3 scripts/row_plan_cold.py $narrow \
        --shapes 8192x1024 --output "$out/row-plan-cold-8192.json"
    ;;
rmsnorm-mask)
    # the row mask of one-row whole-row programs, at the default shapes that have them
    mask="--rows 1 --warps 4 8 16 32 --rewrites no-row-mask --shapes 1024x1024 16384x4096"
    mask="$mask --dtypes float32 float16 bfloat16"
    for cache in warm cold; do
        # shellcheck disable=SC2086  # the arguments are words
        step "rmsnorm-mask-$cache" timeout 200 python3 scripts/row_plan_cold.py --cache "$cache" \
            $mask --output "$out/rmsnorm-mask-$cache.json"
    done
    ;;
rmsnorm-mask-rule)
    # the forward's row mask by its rule (dropped wherever every program's rows exist) against
    # the mask on every plan, at the reference's own plans, warm and cold; then every default
    # case with the switch set either way, graph replay, interleaved (row_mask_probe.py)
    rule="--reference-plan-only --rewrites row-mask --dtypes float32 float16 bfloat16"
    rule="$rule --shapes 1024x1024 65536x128 1823x781 16384x4096"
    for cache in warm cold; do
        # shellcheck disable=SC2086  # the arguments are words
        step "rmsnorm-mask-rule-$cache" timeout 200 python3 scripts/row_plan_cold.py \
            --cache "$cache" $rule --output "$out/rmsnorm-mask-rule-$cache.json"
    done
    step row-mask-probe-cases timeout 200 python3 scripts/row_mask_probe.py --part cases \
        --output "$out/row-mask-probe-cases.json"
    ;;
cold-aa|warm-aa)
    # kernel-bench's A/A test at the small cases, cold or warm: the reference timed twice, as
    # `triton` and as `learner` (a copy of reference/kernels/ standing in for exercises/, in a
    # temporary directory: the tree's exercises are not touched), three visit orders; each
    # log ends with the pairs read by scripts/aa_pairs.py. Logs only: the reports would
    # fingerprint files that only the temporary copy holds.
    cache=${part%-aa}
    repo=$PWD
    aa=$(mktemp -d)
    cp -r exercises "$aa/" && cp reference/kernels/*.py "$aa/exercises/kernels/"
    for seed in 0 1 2; do
        common="--cache $cache --compile --impl learner --samples 15 --visits 5 --seed $seed"
        for op in add rmsnorm; do
            shapes="--shape 1024 1024"
            if [ "$op" = rmsnorm ]; then shapes="$shapes --shape 65536 128"; fi
            step "$part-$op-seed$seed" bash -c "cd '$aa' && export PYTHONPATH='$repo' \
                && timeout 200 python3 -m learning.bench --op $op $shapes $common \
                --output $op-$seed.json && python3 '$repo/scripts/aa_pairs.py' $op-$seed.json"
        done
    done
    rm -rf "$aa"
    ;;
rmsnorm-bwd)
    # the RMSNorm backward's variants (prefetch, narrow weight, evict_first, more programs),
    # timed interleaved at every training shape, fp16, with its A/A pair
    step rmsnorm-bwd-probe timeout 300 python3 scripts/rmsnorm_bwd_probe.py \
        --output "$out/rmsnorm-bwd-probe.json"
    ;;
rmsnorm-wide-bwd)
    # the RMSNorm backward on wide rows (the chunked path): plans and rewrites, interleaved;
    # then the chunked design, its diagnostic without the partial row, shared atomic partial
    # rows and the landed backward (the split kernels), one call each under ncu
    step rmsnorm-wide-bwd-probe timeout 300 python3 scripts/rmsnorm_wide_bwd_probe.py \
        --output "$out/rmsnorm-wide-bwd-probe.json"
    for variant in reference "no partial" "partial atomic, 8 rows" wrapper; do
        ncu_one "ncu-rmsnorm-bwd-${variant//[ ,]/-}-4096x32768" scripts/rmsnorm_wide_bwd_probe.py \
            "$variant" 4096 32768
    done
    ;;
rmsnorm-bwd-ncu)
    # the whole-row backward at 16384x4096 fp16 (90% of the ceiling), one call under ncu
    ncu_one ncu-rmsnorm-bwd-reference-16384x4096 scripts/rmsnorm_wide_bwd_probe.py reference \
        16384 4096
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
rmsnorm-code)
    # what besides the plan sets the one-warp forward's time: 32-bit offsets, a constant stride,
    # no row mask (Inductor's code at 1024 wide), each and all, on one-row plans
    code="--rows 1 --warps 1 2 8 --dtypes float32 float16 --shapes 1024x1024"
    code="$code --rewrites int32 stride-N no-row-mask all"
    for cache in warm cold; do
        # shellcheck disable=SC2086  # the arguments are words
        step "rmsnorm-code-$cache" timeout 250 python3 scripts/row_plan_cold.py --cache "$cache" \
            $code --output "$out/rmsnorm-code-$cache.json"
    done
    ;;
gemm-graph)
    step gemm-graph-length timeout 200 python3 scripts/gemm_graph_length.py \
        --output "$out/gemm-graph-length.json"
    ;;
row-mask)
    # the RMSNorm forward with and without its row mask: placement, every case, a register cap
    step row-mask-probe timeout 400 python3 scripts/row_mask_probe.py \
        --output "$out/row-mask-probe.json"
    # the same versions under Nsight Compute, one launch each, clocks left as they are
    metrics=gpu__time_duration.sum,launch__registers_per_thread,launch__occupancy_limit_registers
    metrics=$metrics,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
    metrics=$metrics,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct
    metrics=$metrics,dram__throughput.avg.pct_of_peak_sustained_elapsed
    metrics=$metrics,smsp__warps_active.avg.per_cycle_active
    metrics="$metrics,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
    for dtype in float16 bfloat16 float32; do
        for version in row-mask no-row-mask rows-clamped; do
            step "ncu-$dtype-$version" timeout 120 ncu --clock-control none --launch-skip 2 \
                --launch-count 1 -k regex:rmsnorm_fwd --metrics "$metrics" --csv \
                --print-units base python3 scripts/profile_rmsnorm_forward.py \
                --dtype "$dtype" --version "$version"
        done
    done
    ;;
*) echo "unknown part $part" >&2; exit 2 ;;
esac
