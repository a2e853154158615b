#!/usr/bin/env bash
# Session 24, runs 4-5: a "skinny" f16 tensor-core forward for few activation rows, from the
# switch in q4_linear_bwd_mma-s24-skinny.diff (applies to 865a0df; not kept): SKINNY = 1
# takes the weights as the MMAs' A operand (16 rows x 16 k) and x's rows as B (16 k x 8
# rows); subgroups own pairs of chunks and walk row blocks of 16 through private shared
# tiles. The diff is run 5's form (subgroups 0-3 on rows 0-63, 4-7 on 64-127, four row
# blocks each); run 4's had every subgroup walk all eight row blocks and also timed M = 4
# and 32. By override of the 32 x 128 codes forward variants, taken from M = 1 with
# ETVK_Q4_FWD_F16_M; the H200's f16-forward tests (with the codes self-check) first.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s24-third.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s24-third.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_patched docs/experiments/q4_linear_bwd_mma-s24-skinny.diff 865a0df
    rm -rf .gl/ovr_sk
    f="-DBM=32 -DFORWARD=1 -DCODES=1 -DSKINNY=1"
    src=q4_linear_bwd_mma.comp
    exp_comp sk q4_linear_fwd_mma_c_t32x128 $src $f
    exp_comp sk q4_linear_fwd_mma_c_t32x128_split $src $f -DSPLIT=1
    exp_comp sk q4_linear_fwd_mma_c_x16_t32x128 $src $f -DX16=1
    exp_comp sk q4_linear_fwd_mma_c_x16_t32x128_split $src $f -DX16=1 -DSPLIT=1
}
exp_begin "$0" "$@"
{
    echo "== q4_linear f16 forward tests, sk"; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_sk q4_tests f16
    echo -n "sk stats: "
    ETVK_Q4_FWD_F16_M=1 ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_sk .gl/bin/etvk bench linear_q4gsw --m 8 --n 8192 --k 8192 --iters 2 --ceiling-mib 64 2>&1 | grep -E "c_t32x128|c_x16_t32x128|self-check|rror" | sed 's/Binary.*Shared/Shared/' | tr '\n' ' '; echo
    for sk in "8192 8192" "28672 8192" "8192 28672"; do
        set -- $sk
        for m in 8 1 16; do
            echo -n "built M=$m N=$1 K=$2: "; exp_row .gl/bin/etvk bench linear_q4gsw --m $m --n $1 --k $2
            echo -n "sk M=$m N=$1 K=$2: "
            ETVK_Q4_FWD_F16_M=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_sk exp_row .gl/bin/etvk bench linear_q4gsw --m $m --n $1 --k $2
        done
        echo -n "sk M=8 N=$1 K=$2 again: "
        ETVK_Q4_FWD_F16_M=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_sk exp_row .gl/bin/etvk bench linear_q4gsw --m 8 --n $1 --k $2
    done
} 2>&1 | tee "$OUT/s24-third.txt"
