#!/usr/bin/env bash
# Session 14, run 7: the q4_linear tests on the H200, then linear_qcs4w at M = 256 / 512 /
# 2048 over the three shapes on the f16 tensor-core forward (default from M = 256) and on
# the int8 one (ETVK_Q4_FWD_F16_M=1000000), beside linear_q4gsw's default.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s14-fifth.sh prepare
#         && cp docs/experiments/run-s14-seventh.sh .gl/
# There:  (device tool, carry [".gl"])  bash .gl/run-s14-seventh.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
{
    .gl/bin/etvk bench linear_q4gsw_backward --m 32 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for t in .gl/bin/q4_linear-*; do timeout 120 "$t" --test-threads=2 2>&1 | grep -v ' \.\.\. ok$' | head -60 || true; done
    for m in 256 512 2048; do
        for s in "8192 8192" "28672 8192" "8192 28672"; do
            set -- $s
            echo -n "qcs4w f16 M=$m N=$1 K=$2: "; bench_row linear_qcs4w --m $m --n $1 --k $2
            echo -n "qcs4w int8 M=$m N=$1 K=$2: "; ETVK_Q4_FWD_F16_M=1000000 bench_row linear_qcs4w --m $m --n $1 --k $2
            echo -n "q4gsw M=$m N=$1 K=$2: "; bench_row linear_q4gsw --m $m --n $1 --k $2
        done
    done
} 2>&1 | tee "$OUT/s14-seventh.txt"
