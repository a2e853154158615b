#!/usr/bin/env bash
# Session 14, run 8: the small-M forward (`q4_linear_small_m{2,4,8}`, fp32 FMAs with each
# code decoded once for all rows and x's slice broadcast from shared memory; forced by
# ETVK_Q4_GEMV=small) against the built choice at M = 2, 4, 8 over the three shapes, with
# the kernels' register counts (ETVK_PIPELINE_STATS) and per-node times at M = 8.
# Here:   scripts/device-bench.sh prepare && cp docs/experiments/run-s14-eighth.sh .gl/
# There:  (device tool, carry [".gl"])  bash .gl/run-s14-eighth.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
{
    .gl/bin/etvk bench linear_q4gsw --m 8 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for m in 8 4 2; do
        for s in "8192 8192" "28672 8192" "8192 28672"; do
            set -- $s
            echo -n "built M=$m N=$1 K=$2: "; bench_row linear_q4gsw --m $m --n $1 --k $2
            echo -n "small M=$m N=$1 K=$2: "; ETVK_Q4_GEMV=small bench_row linear_q4gsw --m $m --n $1 --k $2
        done
    done
    echo -n "small nodes M=8: "; ETVK_BENCH_PROFILE=1 ETVK_Q4_GEMV=small bench_row linear_q4gsw --m 8 --n 8192 --k 8192 | cut -c1-300
    ETVK_PIPELINE_STATS=1 ETVK_Q4_GEMV=small .gl/bin/etvk bench linear_q4gsw --m 8 --n 8192 --k 8192 --iters 3 2>&1 | grep -i -E "small_m|regist" | head -8
} 2>&1 | tee "$OUT/s14-eighth.txt"
