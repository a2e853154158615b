#!/usr/bin/env bash
# Session 26, run 6: two switches of the half GEMV (q4_linear_gemv_half-s26-early-brless.diff,
# results right): BRLESS = 1 loads the next block's first batch with no branch around it
# (past the last block it reloads the current block's, an L2 hit, unused): run 5's EARLY
# lost 0.6-2 us on long launches from one uniform branch in the loop, so does the built
# loop's branch cost as much? And EARLY = 1 (run 5: 0.3 us faster on 4096^2 and 8192 x 2048,
# whose workgroups do one block each) on more shapes of one block per workgroup, to find
# where it pays. Built / variants interleaved twice or three times.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s26-sixth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s26-sixth.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    rm -rf .gl/ovr_early .gl/ovr_brl .gl/ovr_ebrl
    exp_patched docs/experiments/q4_linear_gemv_half-s26-early-brless.diff
    for v in "early -DEARLY=1" "brl -DBRLESS=1" "ebrl -DEARLY=1 -DBRLESS=1"; do
        set -- $v
        exp_comp "$1" q4_linear_gemv_half q4_linear_gemv_half.comp -O "${@:2}"
        exp_comp "$1" q4_linear_gemv_half_sliced q4_linear_gemv_half.comp -O -DSLICED=1 "${@:2}"
    done
}
exp_begin "$0" "$@"
{
    for v in built brl ebrl; do
        echo -n "registers $v: "
        ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v .gl/bin/etvk bench linear_q4gsw \
            --m 1 --n 8192 --k 8192 --iters 2 --ceiling-mib 64 2>&1 | grep -i "gemv_half" |
            grep -oE "Register Count=[0-9]+" | head -1
    done
    for c in "linear_q4gsw 8192 8192" "linear_q4gsw 28672 8192" "linear_q4gsw 8192 28672" \
             "linear_qcs4w 8192 8192" "linear_q4gsw 4096 4096"; do
        set -- $c
        for v in built brl ebrl built brl ebrl; do
            echo -n "$v $1 N=$2 K=$3: "
            ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v exp_row .gl/bin/etvk bench "$1" --m 1 --n "$2" --k "$3"
        done
    done
    for c in "1024 4096" "4096 2048" "4096 1024" "2048 4096" "6144 4096" "14336 4096" \
             "2048 8192" "1024 8192"; do
        set -- $c
        for v in built early built early; do
            echo -n "$v linear_q4gsw N=$1 K=$2: "
            ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v exp_row .gl/bin/etvk bench linear_q4gsw --m 1 --n "$1" --k "$2"
        done
    done
} 2>&1 | tee "$OUT/s26-sixth.txt"
