#!/usr/bin/env bash
# Session 26, run 8: the M = 1 wide backward at one workgroup per SM (132) on weights of
# at most 2^24 codes (select::WIDE_BWD_TARGET_SMALL; session 25 run 5 timed it by
# ETVK_Q4_BWD_WGS: 0.5-0.8 us faster at 4096^2 and 8192 x 2048, level at 2048^2,
# 4096 x 1024, 2048 x 8192), built, against the binary before it (9f1ae3c), interleaved
# twice; 4096 x 8192 keeps two per SM (sanity); the H200's q4_linear tests with it.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s26-eighth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s26-eighth.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_old_binary 9f1ae3c
}
exp_begin "$0" "$@"
{
    echo "== q4_linear tests"; q4_tests
    for c in "4096 4096" "8192 2048" "1024 4096" "2048 2048" "2048 8192" "4096 1024" \
             "4096 8192"; do
        set -- $c
        exp_ab linear_q4gsw_backward 1 "$1" "$2"
    done
} 2>&1 | tee "$OUT/s26-eighth.txt"
