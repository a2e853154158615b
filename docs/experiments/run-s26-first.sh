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
    old=/tmp/etvk-old
    [ -d "$old" ] || git worktree add -f "$old" 98d6d9a
    (cd "$old" && git checkout -q 98d6d9a && cargo build --release -p etvk-cli)
    mkdir -p .gl/bin_old
    cp "$old/target/release/etvk" .gl/bin_old/
}
exp_begin "$0" "$@"
{
    echo "== q4_linear tests"; q4_tests
    for c in "linear_q4gsw 8 8192 8192" "linear_q4gsw 8 28672 8192" "linear_q4gsw 16 8192 8192" \
             "linear_q4gsw 32 8192 28672" "linear_q4gsw 64 28672 8192" \
             "linear_q4gsw 2 8192 28672" "linear_q4gsw 4 8192 28672" "linear_qcs4w 8 8192 8192"; do
        set -- $c
        for v in bin_old bin bin_old bin; do
            echo -n "$v $1 M=$2 N=$3 K=$4: "
            exp_row ".gl/$v/etvk" bench "$1" --m "$2" --n "$3" --k "$4"
        done
    done
} 2>&1 | tee "$OUT/s26-first.txt"
