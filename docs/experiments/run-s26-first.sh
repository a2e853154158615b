#!/usr/bin/env bash
# Prepared in session 25 (its device time was spent): 9d08c03's limb nodes (launch capped at
# 65535 workgroups, each walking groups of 8 chunks) against 98d6d9a's (one launch of all
# chunks), whole ops, interleaved twice; the H200's q4_linear tests first (the int8
# self-check walks the loop there). Keep 9d08c03 unless an op is slower beyond noise.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s26-first.sh prepare
#         (prepare builds 98d6d9a's etvk in a worktree)
# There:  (device tool, carry [".gl"])  bash .gl/run-s26-first.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_old_binary 98d6d9a
}
exp_begin "$0" "$@"
{
    echo "== q4_linear tests"; q4_tests
    for c in "linear_q4gsw 8 8192 8192" "linear_q4gsw 8 28672 8192" "linear_q4gsw 16 8192 8192" \
             "linear_q4gsw 32 8192 28672" "linear_q4gsw 64 28672 8192" \
             "linear_q4gsw 2 8192 28672" "linear_q4gsw 4 8192 28672" "linear_qcs4w 8 8192 8192"; do
        exp_ab $c
    done
} 2>&1 | tee "$OUT/s26-first.txt"
