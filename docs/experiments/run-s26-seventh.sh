#!/usr/bin/env bash
# Session 26, run 7: the built `q4_linear_gemv_half_early` (taken at M = 1 on unsliced rows
# of <= 128 chunks whose blocks the wave covers at once) against the binary before it
# (08b7398: same kernels as 9d08c03), interleaved twice; the H200's q4_linear tests with it;
# the M = 1 backward on the same small shapes (unchanged kernels) for the ratio.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s26-seventh.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s26-seventh.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_old_binary 08b7398
}
exp_begin "$0" "$@"
{
    echo "== q4_linear tests"; q4_tests
    for c in "4096 4096" "1024 4096" "4096 2048" "8192 2048" "2048 4096" "4096 1024" \
             "14336 4096" "8192 8192"; do
        set -- $c
        exp_ab linear_q4gsw 1 "$1" "$2"
    done
    for c in "4096 4096" "1024 4096" "8192 2048" "2048 8192"; do
        set -- $c
        echo -n "backward N=$1 K=$2: "; exp_row .gl/bin/etvk bench linear_q4gsw_backward --m 1 --n "$1" --k "$2"
    done
} 2>&1 | tee "$OUT/s26-seventh.txt"
