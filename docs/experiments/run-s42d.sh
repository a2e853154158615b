#!/usr/bin/env bash
# Session 42, fourth run: the choose_qparams node's segmented form (at most 16 rows longer
# than 8192 values, segments of 4096 in workgroups of their own; built) against a workgroup
# of 1024 per row (ETVK_CHOOSE_SEGMENTS=0), node times by ETVK_BENCH_PROFILE=1, interleaved
# twice; the 8da4w op tests on the GPU. The form is not in the build: apply
# docs/experiments/choose_qparams-s42-seg.diff (made against 7c85ebd) and build first.
# Not run in session 42 (no device time left).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s42d.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s42d.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_carry_tests
}
exp_begin "$0" "$@"
{
    exp_header
    for round in 1 2; do
        for row in "2 8192 28672" "4 8192 28672" "8 8192 28672" "2 8192 16384" "8 8192 14336" \
            "16 4096 14336" "1 8192 28672"; do
            read -r m n k <<<"$row"
            echo -n "r$round wg1 dq8ca M=$m N=$n K=$k: "
            ETVK_CHOOSE_SEGMENTS=0 ETVK_BENCH_PROFILE=1 bench_row linear_dq8ca_q4gsw --m "$m" --n "$n" --k "$k"
            echo -n "r$round seg dq8ca M=$m N=$n K=$k: "
            ETVK_BENCH_PROFILE=1 bench_row linear_dq8ca_q4gsw --m "$m" --n "$n" --k "$k"
        done
    done
    echo "== 8da4w op tests"
    exp_ops_tests quantize act_quant dq_linear choose_node norm_writes rms_norm_runs gated_silu_runs_inside
} 2>&1 | tee "$OUT/s42d.txt"
