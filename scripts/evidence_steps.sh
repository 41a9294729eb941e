# The steps every GPU evidence script runs (scripts/h200_evidence.sh, lab/*/run.sh), sourced
# after the caller has set `out` (the folder each step's log goes to). Each step's stdout and
# stderr go to $out/<name>.log; a failed step is reported and the rest go on.
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
recorded="--samples 15 --visits 5"  # the recorded sweeps' sampling
