#!/usr/bin/env bash
# The device runs that answered this question (README.md beside this file), as recorded:
#   lab/gemm-autotune-pick/run.sh PART OUTDIR, from the repository root with the GPU image's python3
#   autotune-pick OUTDIR  the GEMM autotuner's pick, default and warm
#   gemm-graph OUTDIR     the GEMM against torch.mm in graphs of two lengths, each tiling
#                         pinned, the autotuner's pick
set -uo pipefail
usage="usage: lab/gemm-autotune-pick/run.sh autotune-pick|gemm-graph OUTDIR"
part=${1:?$usage}
out=${2:?$usage}
# shellcheck source=scripts/evidence_steps.sh
source scripts/evidence_steps.sh
case $part in
autotune-pick)
    # the GEMM autotuner's pick under its own benchmarker and under warm graph replay
    step gemm-autotune-pick timeout 200 python3 lab/gemm-autotune-pick/gemm_autotune_pick.py \
        --output "$out/gemm-autotune-pick.json"
    ;;
gemm-graph)
    step gemm-graph-length timeout 200 python3 lab/gemm-autotune-pick/gemm_graph_length.py \
        --output "$out/gemm-graph-length.json"
    ;;
*) echo "unknown part $part" >&2; exit 2 ;;
esac
