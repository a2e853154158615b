#!/usr/bin/env bash
# Prepared in session 24, not run (its device time was spent): the int8 tensor-core forward
# after commit 96ecd11 (split-K slices summed in the kernel by the last workgroup of each
# tile; the reduce dispatch idle) against the binary of 580ead0 (the q4_linear_reduce node
# after the kernel), whole ops timed, interleaved twice; the H200's q4_linear tests (the
# tensor-core forward test's K = 8200 case splits) first, per-node profiles last. Keep 96ecd11
# only if the tests pass and no shape is slower.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s24-ninth.sh prepare
#         (prepare builds 580ead0's etvk in a worktree: a few minutes)
# There:  (device tool, carry [".gl"])  bash .gl/run-s24-ninth.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_old_binary 580ead0
}
exp_begin "$0" "$@"
{
    echo "== q4_linear tests"; q4_tests
    for c in "8 8192 8192" "8 28672 8192" "8 8192 28672" "16 8192 8192" "32 8192 8192" \
             "32 28672 8192" "32 8192 28672"; do
        exp_ab linear_q4gsw $c
    done
    # Per-node times of the new build (limbs node, MMA kernel): the limbs node's share
    # decides whether making the limbs in the MMA kernel is worth a try.
    for c in "8 8192 8192" "8 28672 8192" "32 8192 8192"; do
        set -- $c
        echo -n "profile M=$1 N=$2 K=$3: "
        ETVK_BENCH_PROFILE=1 .gl/bin/etvk bench linear_q4gsw --m "$1" --n "$2" --k "$3" \
            --iters 20 --ceiling-mib 64 2>&1 | grep -E "node|^\| linear" | tr '\n' ' '
        echo
    done
} 2>&1 | tee "$OUT/s24-ninth.txt"
