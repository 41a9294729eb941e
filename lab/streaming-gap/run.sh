#!/usr/bin/env bash
# The device runs that answered this question (README.md beside this file), as recorded:
#   lab/streaming-gap/run.sh PART OUTDIR, from the repository root with the GPU image's python3
#   streaming-fp32 OUTDIR  fp32 add/sum/max against compile, under ncu
#   plans OUTDIR           streaming launch plans against compile; GEMM ws/clusters
#   plans-ncu OUTDIR       those plans under ncu; external-baselines-gemm
#   evict-ncu OUTDIR       the eviction hint's kernels with and without it, ncu
set -uo pipefail
usage="usage: lab/streaming-gap/run.sh streaming-fp32|plans|plans-ncu|evict-ncu OUTDIR"
part=${1:?$usage}
out=${2:?$usage}
# shellcheck source=scripts/evidence_steps.sh
source scripts/evidence_steps.sh
case $part in
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
                    --print-units base python3 lab/streaming-gap/profile_streaming.py --op "$op" \
                    --shape "$shape" --dtype float32 --variant "$variant"
            done
        done
    done
    ;;
plans)
    # launch plans for the streaming cases compile wins by under 1%, paired against compile
    step streaming-plans timeout 300 python3 lab/streaming-gap/streaming_plans.py \
        --output "$out/streaming-plans.json"
    # the last two GEMM probes of the old method, on the capture-first interleaving
    step tune-gemm-ws-captured timeout 200 python3 scripts/tune_gemm.py --warp-specialize \
        --forward-only --output "$out/tune-gemm-ws-captured.json"
    step tune-gemm-clusters-captured timeout 200 python3 scripts/tune_gemm.py --clusters \
        --forward-only --output "$out/tune-gemm-clusters-captured.json"
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
            --metrics "$metrics" --csv --print-units base python3 lab/streaming-gap/profile_streaming.py \
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
            --csv --print-units base python3 lab/streaming-gap/profile_streaming.py --op "$op" \
            --shape 16384x4096 --dtype "$dtype" --variant "$variant" ${rewrite:+--rewrite "$rewrite"}
    done
    ;;
*) echo "unknown part $part" >&2; exit 2 ;;
esac
