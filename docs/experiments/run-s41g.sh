#!/usr/bin/env bash
# Session 41, seventh run: a short repeat of the session's A/Bs in case an H200 comes (every
# earlier run came on an H100): the M = 1 half GEMV over rows of up to 512 chunks
# (ETVK_Q4_HALF_MAX_CHUNKS=256 = before), the persistent M = 2..7 GEMV over them
# (ETVK_Q4_PERSIST_MAX_CHUNKS=256), the 8da4w M = 2..7 DQ form (ETVK_DQ_PERSIST=0), the
# 8192^2 M = 1 floor row; one round.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s41g.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s41g.sh
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
    echo -n "floor M=1 N=8192 K=8192: "
    exp_row2g linear_q4gsw --m 1 --n 8192 --k 8192
    for shape in "4096 14336" "8192 16384"; do
        read -r n k <<<"$shape"
        echo -n "old M=1 N=$n K=$k: "
        ETVK_Q4_HALF_MAX_CHUNKS=256 exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
        echo -n "new M=1 N=$n K=$k: "
        exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
    done
    echo -n "old M=4 N=8192 K=14336: "
    ETVK_Q4_PERSIST_MAX_CHUNKS=256 exp_row2g linear_q4gsw --m 4 --n 8192 --k 14336
    echo -n "new M=4 N=8192 K=14336: "
    exp_row2g linear_q4gsw --m 4 --n 8192 --k 14336
    for m in 2 7; do
        echo -n "old dq8ca M=$m N=8192 K=8192: "
        ETVK_DQ_PERSIST=0 exp_row2g linear_dq8ca_q4gsw --m $m --n 8192 --k 8192
        echo -n "new dq8ca M=$m N=8192 K=8192: "
        exp_row2g linear_dq8ca_q4gsw --m $m --n 8192 --k 8192
    done
} 2>&1 | tee "$OUT/s41g.txt"
