#!/usr/bin/env bash
# Session 26, run 5: the half GEMV with the first block's second batch loaded before the
# activations (EARLY = 1, q4_linear_gemv_half-s26-early.diff; results right, the same loop
# otherwise: one register set for that batch, no peeled block as in session 19's PEEL).
# Run 4 put the GEMV's excess over a plain read in its fixed part (~6.3 us against ~4.5):
# does the start's chain (x, then limbs, then the second batch's loads) count? Built and
# EARLY interleaved three times; registers (ETVK_PIPELINE_STATS) first.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s26-fifth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s26-fifth.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    rm -rf .gl/ovr_early
    exp_patched docs/experiments/q4_linear_gemv_half-s26-early.diff
    exp_comp early q4_linear_gemv_half q4_linear_gemv_half.comp -O -DEARLY=1
    exp_comp early q4_linear_gemv_half_sliced q4_linear_gemv_half.comp -O -DEARLY=1 -DSLICED=1
}
exp_begin "$0" "$@"
{
    for v in built early; do
        echo "== registers, $v"
        ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v .gl/bin/etvk bench linear_q4gsw \
            --m 1 --n 8192 --k 8192 --iters 2 --ceiling-mib 64 2>&1 | grep -i "gemv_half" | grep -i "regist" | head -2
        ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v .gl/bin/etvk bench linear_q4gsw \
            --m 1 --n 8192 --k 28672 --iters 2 --ceiling-mib 64 2>&1 | grep -i "gemv_half" | grep -i "regist" | head -2
    done
    for c in "linear_q4gsw 64 8192" "linear_q4gsw 2112 8192" "linear_q4gsw 8192 8192" \
             "linear_q4gsw 28672 8192" "linear_q4gsw 8192 28672" "linear_q4gsw 4096 4096" \
             "linear_q4gsw 8192 2048" "linear_qcs4w 8192 8192"; do
        set -- $c
        for v in built early built early built early; do
            echo -n "$v $1 N=$2 K=$3: "
            ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v exp_row .gl/bin/etvk bench "$1" --m 1 --n "$2" --k "$3"
        done
    done
} 2>&1 | tee "$OUT/s26-fifth.txt"
