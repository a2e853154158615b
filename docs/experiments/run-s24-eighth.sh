#!/usr/bin/env bash
# Prepared in session 24, not run (its device time was spent): run 8's question for the two
# variants it left out, q4_linear_mma_f2 (M = 9..16 forward) and q4_linear_bwd_staged_m4
# (M = 3..4 backward), without glslc -O, by override, built and unoptimized interleaved
# twice. If either gains, set opt=0 on its manifest line and run the q4_linear tests there.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s24-eighth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s24-eighth.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    rm -rf .gl/ovr_o0b
    exp_comp o0b q4_linear_mma_f2 q4_linear_mma.comp -DMF=2 -DSTEP=4
    exp_comp o0b q4_linear_bwd_staged_m4 q4_linear_bwd_staged.comp -DMT=4
}
exp_begin "$0" "$@"
{
    for c in "linear_q4gsw 16 28672 8192" "linear_q4gsw 16 8192 8192" \
             "linear_q4gsw_backward 4 8192 28672" "linear_q4gsw_backward 4 8192 8192"; do
        set -- $c
        for v in built o0b built o0b; do
            echo -n "$v $1 M=$2 N=$3 K=$4: "
            ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v exp_row .gl/bin/etvk bench "$1" --m "$2" --n "$3" --k "$4"
        done
    done
} 2>&1 | tee "$OUT/s24-eighth.txt"
