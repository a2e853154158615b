#!/usr/bin/env bash
# Prepared in session 25: the native f16 forward's hi / lo form on rows longer than 3744
# (117 steps of 32 k), where its emulated build lost products on lavapipe until session
# 25's unrolled loops (llvmpipe's loop limiter; the native steps have no such loops, so no
# fault is expected). The codes form turned off (ETVK_Q4_FWD_CODES=0), M = 128 (the f16
# forward's threshold) and 512; the bench's f64 check says ok or MISMATCH, and the kernel
# list must name q4_linear_fwd_mma_t* (not _c_).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s26-second.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s26-second.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
{
    for k in 3744 3776 4096 8192 28672; do
        for m in 128 512; do
            echo -n "hi/lo M=$m N=8192 K=$k: "
            ETVK_Q4_FWD_CODES=0 exp_row .gl/bin/etvk bench linear_q4gsw \
                --m "$m" --n 8192 --k "$k"
        done
    done
} 2>&1 | tee "$OUT/s26-second.txt"
