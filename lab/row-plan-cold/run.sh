#!/usr/bin/env bash
# The device runs that answered this question (README.md beside this file), as recorded:
#   lab/row-plan-cold/run.sh PART OUTDIR, from the repository root with the GPU image's python3
#   row-plan-cold OUTDIR      the RMSNorm forward's row plans with a cold L2, against compile
#                             and Inductor's pick (two seeds)
#   row-plan-warm OUTDIR      the plans of 1-2 rows on 1-8 warps at 1024 wide, warm at three
#                             row counts and cold at 8192 rows
#   rmsnorm-mask OUTDIR       the one-row forward without its row mask at 1024^2 and
#                             16384x4096, every dtype, warm and cold
#   rmsnorm-mask-rule OUTDIR  the forward's row-mask rule against the mask everywhere
#   rmsnorm-code OUTDIR       the one-row forward with Inductor's code choices, warm and cold
set -uo pipefail
usage="usage: lab/row-plan-cold/run.sh row-plan-cold|row-plan-warm|rmsnorm-mask|rmsnorm-mask-rule|rmsnorm-code OUTDIR"
part=${1:?$usage}
out=${2:?$usage}
# shellcheck source=scripts/evidence_steps.sh
source scripts/evidence_steps.sh
case $part in
row-plan-cold)
    # the cold RMSNorm forward at 1024^2 and 65536x128: every whole-row plan, compile (and the
    # config Inductor picked), eager; two visit orders
    for seed in 0 1; do
        step "row-plan-cold-seed$seed" timeout 200 python3 lab/row-plan-cold/row_plan_cold.py --seed "$seed" \
            --output "$out/row-plan-cold-seed$seed.json"
    done
    ;;
row-plan-warm)
    # do the one-row plans on few warps that tie compile cold at 1024^2 cost the warm case?
    narrow="--rows 1 2 --warps 1 2 4 8 --dtypes float32 float16"
    # shellcheck disable=SC2086  # the plan arguments are words
    step row-plan-warm timeout 300 python3 lab/row-plan-cold/row_plan_cold.py --cache warm $narrow \
        --shapes 1024x1024 8192x1024 65536x1024 --output "$out/row-plan-warm.json"
    # shellcheck disable=SC2086
    step row-plan-cold-8192 timeout 200 python3 lab/row-plan-cold/row_plan_cold.py $narrow \
        --shapes 8192x1024 --output "$out/row-plan-cold-8192.json"
    ;;
rmsnorm-mask)
    # the row mask of one-row whole-row programs, at the default shapes that have them
    mask="--rows 1 --warps 4 8 16 32 --rewrites no-row-mask --shapes 1024x1024 16384x4096"
    mask="$mask --dtypes float32 float16 bfloat16"
    for cache in warm cold; do
        # shellcheck disable=SC2086  # the arguments are words
        step "rmsnorm-mask-$cache" timeout 200 python3 lab/row-plan-cold/row_plan_cold.py --cache "$cache" \
            $mask --output "$out/rmsnorm-mask-$cache.json"
    done
    ;;
rmsnorm-mask-rule)
    # the forward's row mask by its rule (dropped wherever every program's rows exist) against
    # the mask on every plan, at the reference's own plans, warm and cold (every default case
    # with the switch set either way was row_mask_probe.py's: results/NOTES.md)
    rule="--reference-plan-only --rewrites row-mask --dtypes float32 float16 bfloat16"
    rule="$rule --shapes 1024x1024 65536x128 1823x781 16384x4096"
    for cache in warm cold; do
        # shellcheck disable=SC2086  # the arguments are words
        step "rmsnorm-mask-rule-$cache" timeout 200 python3 lab/row-plan-cold/row_plan_cold.py \
            --cache "$cache" $rule --output "$out/rmsnorm-mask-rule-$cache.json"
    done
    ;;
rmsnorm-code)
    # what besides the plan sets the one-warp forward's time: 32-bit offsets, a constant stride,
    # no row mask (Inductor's code at 1024 wide), each and all, on one-row plans
    code="--rows 1 --warps 1 2 8 --dtypes float32 float16 --shapes 1024x1024"
    code="$code --rewrites int32 stride-N no-row-mask all"
    for cache in warm cold; do
        # shellcheck disable=SC2086  # the arguments are words
        step "rmsnorm-code-$cache" timeout 250 python3 lab/row-plan-cold/row_plan_cold.py --cache "$cache" \
            $code --output "$out/rmsnorm-code-$cache.json"
    done
    ;;
*) echo "unknown part $part" >&2; exit 2 ;;
esac
