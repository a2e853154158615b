#!/usr/bin/env bash
# Session 24, run 9: the built binary after the session's kernel commits (the wide
# backward's one row body, opt=0 for q4_linear_mma_f1 and q4_linear_bwd_staged_m8): the
# q4_linear tests natively, then M = 1 / 8 / 32 forward and backward on the three shapes.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s24-seventh.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s24-seventh.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
{
    echo "== q4_linear tests"; q4_tests
    for shape in "8192 8192" "28672 8192" "8192 28672"; do
        set -- $shape
        for m in 1 8 32; do
            for op in linear_q4gsw linear_q4gsw_backward; do
                exp_row .gl/bin/etvk bench $op --m $m --n $1 --k $2
            done
        done
    done
} 2>&1 | tee "$OUT/s24-seventh.txt"
