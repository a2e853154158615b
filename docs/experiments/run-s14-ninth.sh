#!/usr/bin/env bash
# Session 14, run 9: the f16 forward's two-MMA form for fp16 activations
# (`q4_linear_fwd_mma_x16_*`): the q4_linear tests on the H200, then `etvk bench --x-f16`
# (x fp16, the conversion node included in the op's time) at M = 128 .. 2048 over the three
# shapes, against the int8 kernel below the threshold (ETVK_Q4_FWD_F16_M).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s14-fifth.sh prepare
#         && cp docs/experiments/run-s14-ninth.sh .gl/
# There:  (device tool, carry [".gl"])  bash .gl/run-s14-ninth.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
{
    .gl/bin/etvk bench linear_q4gsw --m 512 --n 8192 --k 8192 --iters 10 --x-f16 >/dev/null 2>&1 || true
    for t in .gl/bin/q4_linear-*; do timeout 120 "$t" --test-threads=2 2>&1 | grep -v ' \.\.\. ok$' | head -40 || true; done
    for m in 512 2048 256 128; do
        for s in "8192 8192" "28672 8192" "8192 28672"; do
            set -- $s
            echo -n "x16 M=$m N=$1 K=$2: "; ETVK_Q4_FWD_F16_M=1 bench_row linear_q4gsw --m $m --n $1 --k $2 --x-f16
            if [ $m -le 256 ]; then
                echo -n "int8 (x fp16) M=$m N=$1 K=$2: "; ETVK_Q4_FWD_F16_M=8192 bench_row linear_q4gsw --m $m --n $1 --k $2 --x-f16
            fi
        done
    done
} 2>&1 | tee "$OUT/s14-ninth.txt"
