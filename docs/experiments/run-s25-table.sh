#!/usr/bin/env bash
# Session 25, last run: the "Current standing" table at the session's build (the q4_linear
# tests first; M in {1, 8, 32, 512, 2048} on the issue's three shapes for the three ops; the
# portable M = 512 kernels with tensor cores off; M = 1 on shapes outside the table).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s25-table.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s25-table.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
{
    echo "== q4_linear tests"; q4_tests
    .gl/bin/etvk bench read --ceiling-mib 2048 2>&1 | grep -E 'ceiling|copy' || true
    for shape in "8192 8192" "28672 8192" "8192 28672"; do
        set -- $shape
        for m in 1 8 32 512 2048; do
            for op in linear_q4gsw linear_q4gsw_backward linear_qcs4w; do
                exp_row .gl/bin/etvk bench $op --m $m --n $1 --k $2
            done
        done
    done
    for shape in "8192 8192" "28672 8192" "8192 28672"; do
        set -- $shape
        for op in linear_q4gsw linear_q4gsw_backward; do
            echo -n "portable: "; ETVK_Q4_MMA=0 exp_row .gl/bin/etvk bench $op --m 512 --n $1 --k $2
        done
    done
    for shape in "4096 4096" "14336 4096" "4096 14336" "2048 8192" "8192 2048"; do
        set -- $shape
        for op in linear_q4gsw linear_q4gsw_backward; do
            exp_row .gl/bin/etvk bench $op --m 1 --n $1 --k $2
        done
    done
} 2>&1 | tee "$OUT/s25-table.txt"
