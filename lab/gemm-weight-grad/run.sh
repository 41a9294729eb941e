#!/usr/bin/env bash
# The device runs that answered this question (README.md beside this file), as recorded:
#   lab/gemm-weight-grad/run.sh PART OUTDIR, from the repository root with the GPU image's python3
#   weight-grad OUTDIR  dB through the rows and persistent kernels, and the training step
set -uo pipefail
usage="usage: lab/gemm-weight-grad/run.sh weight-grad OUTDIR"
part=${1:?$usage}
out=${2:?$usage}
# shellcheck source=scripts/evidence_steps.sh
source scripts/evidence_steps.sh
case $part in
weight-grad)
    # dB through the rows kernel and the persistent one, and the whole step (matmul.py)
    step gemm-weight-grad timeout 150 python3 lab/gemm-weight-grad/gemm_weight_grad.py \
        --output "$out/gemm-weight-grad.json"
    ;;
*) echo "unknown part $part" >&2; exit 2 ;;
esac
