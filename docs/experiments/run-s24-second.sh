#!/usr/bin/env bash
# Session 24, run 3: the half GEMV (M = 1) with one batch of loads per 8-row block, from the
# switch in q4_linear_gemv_half-s24-onebatch.diff (applies to 865a0df; not kept):
# ONEBATCH = 1 issues the next block's weights and scales into the same registers right
# after this block's products, in flight during its sums; ONEBATCH = 2 loads them before the
# products, into a second set (built: two 4-row batches per block, the next batch loaded
# before the current one is used). By override of both half GEMVs; the H200's GEMV
# q4_linear tests with it first.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s24-second.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s24-second.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_patched docs/experiments/q4_linear_gemv_half-s24-onebatch.diff 865a0df
    rm -rf .gl/ovr_ob .gl/ovr_ob2
    for d in 1 2; do
        o=ob; [ $d = 2 ] && o=ob2
        exp_comp $o q4_linear_gemv_half q4_linear_gemv_half.comp -O -DONEBATCH=$d
        exp_comp $o q4_linear_gemv_half_sliced q4_linear_gemv_half.comp -O -DONEBATCH=$d -DSLICED=1
    done
}
exp_begin "$0" "$@"
{
    echo "== q4_linear GEMV tests, ob"; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_ob q4_tests gemv
    for v in built ob ob2; do
        echo -n "$v stats: "
        ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 28672 --iters 2 --ceiling-mib 64 2>&1 | grep -i "gemv_half" | sed 's/Binary.*Shared/Shared/' | tr '\n' ' '; echo
    done
    for sk in "8192 8192" "28672 8192" "8192 28672" "4096 4096" "8192 2048" "64 8192"; do
        set -- $sk
        for v in built ob ob2 built ob ob2; do
            echo -n "$v M=1 N=$1 K=$2: "
            ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v exp_row .gl/bin/etvk bench linear_q4gsw --m 1 --n $1 --k $2
        done
    done
    for v in built ob; do
        echo -n "$v qcs4w M=1 8192^2: "
        ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v exp_row .gl/bin/etvk bench linear_qcs4w --m 1 --n 8192 --k 8192
    done
} 2>&1 | tee "$OUT/s24-second.txt"
