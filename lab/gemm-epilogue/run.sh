#!/usr/bin/env bash
# The device runs that answered this question (README.md beside this file), as recorded:
#   lab/gemm-epilogue/run.sh PART OUTDIR, from the repository root with the GPU image's python3
#   gemm-epilogue OUTDIR  the GEMM over K with its store skipped; the reference and cuBLAS
#                         at the two gap shapes, ncu
set -uo pipefail
usage="usage: lab/gemm-epilogue/run.sh gemm-epilogue OUTDIR"
part=${1:?$usage}
out=${2:?$usage}
# shellcheck source=scripts/evidence_steps.sh
source scripts/evidence_steps.sh
case $part in
gemm-epilogue)
    # the reference, torch.mm and the reference with its store skipped, over K, interleaved
    step gemm-epilogue timeout 240 python3 lab/gemm-epilogue/gemm_epilogue.py \
        --output "$out/gemm-epilogue.json"
    # the reference and cuBLAS at the two gap shapes under Nsight Compute (clocks left as they
    # are): clusters, L2 and DRAM traffic, the tensor pipe's busy share, stall reasons
    for run in "16384 1024 1024" "4096 4096 4096"; do
        for variant in reference torch.mm; do
            ncu_one "ncu-gemm-${variant/./}-${run// /x}" lab/gemm-epilogue/gemm_epilogue.py "$variant" \
                $run
        done
    done
    ;;
*) echo "unknown part $part" >&2; exit 2 ;;
esac
