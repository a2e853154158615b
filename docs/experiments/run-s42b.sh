#!/usr/bin/env bash
# Session 42, second run: 8da4w at M = 8 on rows the int8 tensor cores take (K > 4096): the
# persistent int8 GEMV's DQ form with its choose node idle (ETVK_Q4_MMA_M=9 moves the
# tensor-core forward's threshold past 8) against the built int8 tensor-core DQ forward
# after the choose node, interleaved twice; and what the choose node and three limbs cost
# on rows past the persistent form (8da4w against weight-only at M = 2 / 4 on K = 28672
# and on the 2^27-code 8192 x 16384).
# Outcome (run 2, an H100): journal, session 42 (kept: select::dq_persist_at_m8).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s42b.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s42b.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
{
    exp_header
    for round in 1 2; do
        for shape in "8192 8192" "28672 8192" "4096 14336" "14336 8192" "8192 16384"; do
            read -r n k <<<"$shape"
            echo -n "r$round mma dq8ca M=8 N=$n K=$k: "
            exp_row2g linear_dq8ca_q4gsw --m 8 --n "$n" --k "$k"
            echo -n "r$round persist dq8ca M=8 N=$n K=$k: "
            ETVK_Q4_MMA_M=9 exp_row2g linear_dq8ca_q4gsw --m 8 --n "$n" --k "$k"
        done
    done
    for shape in "8192 28672" "8192 16384"; do
        read -r n k <<<"$shape"
        for m in 2 4; do
            echo -n "q4gsw M=$m N=$n K=$k: "
            exp_row2g linear_q4gsw --m $m --n "$n" --k "$k"
            echo -n "dq8ca M=$m N=$n K=$k: "
            exp_row2g linear_dq8ca_q4gsw --m $m --n "$n" --k "$k"
        done
    done
} 2>&1 | tee "$OUT/s42b.txt"
