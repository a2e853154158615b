#!/usr/bin/env bash
# Session 42, third run: the choose_qparams node over long rows in workgroups of 1024 (built)
# against 256 (ETVK_CHOOSE_WIDE=0), on 8da4w linears whose M still runs the node: M = 2 / 4
# past the persistent GEMV (K = 16384, 28672), M = 8 / 16 / 32 on the tensor cores (K = 8192,
# 14336, 28672); node times by ETVK_BENCH_PROFILE=1. Interleaved twice. Then M = 8 at 8192^2
# and 28672 x 8192 with the built selection, and the 8da4w op tests on the GPU.
# Outcome (run 3, an H100): journal, session 42 (the 1024-lane node kept).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s42c.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s42c.sh
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
        for row in "2 8192 28672" "4 8192 28672" "2 8192 16384" "8 8192 14336" "16 8192 8192" \
            "32 4096 14336" "32 8192 28672"; do
            read -r m n k <<<"$row"
            echo -n "r$round w256 dq8ca M=$m N=$n K=$k: "
            ETVK_CHOOSE_WIDE=0 ETVK_BENCH_PROFILE=1 bench_row linear_dq8ca_q4gsw --m "$m" --n "$n" --k "$k"
            echo -n "r$round w1024 dq8ca M=$m N=$n K=$k: "
            ETVK_BENCH_PROFILE=1 bench_row linear_dq8ca_q4gsw --m "$m" --n "$n" --k "$k"
        done
    done
    for shape in "8192 8192" "28672 8192"; do
        read -r n k <<<"$shape"
        echo -n "built dq8ca M=8 N=$n K=$k: "
        exp_row2g linear_dq8ca_q4gsw --m 8 --n "$n" --k "$k"
    done
    echo "== 8da4w op tests"
    exp_ops_tests quantize act_quant dq_linear choose_node norm_writes rms_norm_runs gated_silu_runs_inside
} 2>&1 | tee "$OUT/s42c.txt"
