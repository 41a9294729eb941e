#!/usr/bin/env bash
# The device runs that answered this question (README.md beside this file), as recorded:
#   lab/stream-ceiling/run.sh PART OUTDIR, from the repository root with the GPU image's python3
#   probes OUTDIR  the launcher's GPU tests, the wrapper cost, the streaming ceiling by
#                  read:write mix, the GEMM with warp-specialized tilings
set -uo pipefail
usage="usage: lab/stream-ceiling/run.sh probes OUTDIR"
part=${1:?$usage}
out=${2:?$usage}
# shellcheck source=scripts/evidence_steps.sh
source scripts/evidence_steps.sh
case $part in
probes)
    step gpu-tests-launch timeout 120 python3 -m pytest -q -s -p no:cacheprovider -m gpu \
        tests/reference/test_launch.py
    step wrapper-overhead-replay timeout 150 python3 scripts/wrapper_overhead.py \
        --output "$out/wrapper-overhead-replay.json"
    step stream-ceiling timeout 90 python3 lab/stream-ceiling/stream_ceiling.py \
        --output "$out/stream-ceiling.json"
    step tune-gemm-ws timeout 300 python3 scripts/tune_gemm.py --warp-specialize --forward-only \
        --output "$out/tune-gemm-ws.json"
    ;;
*) echo "unknown part $part" >&2; exit 2 ;;
esac
