#!/usr/bin/env bash
# Session 24, run 2: the f16 codes forward's 128 x 128 tiles with two sets of 16-k step
# tiles and one barrier per step (DBUF = 1, BR = 16; the backward's form since 21e562f;
# built: one set of 32-k steps, two barriers per step), by override of the t128 codes
# variants (fp32 and fp16 activations, whole and split), from the switch in
# q4_linear_bwd_mma-s24-fwd-dbuf.diff (applies to 865a0df; not kept); the H200's f16-forward
# q4_linear tests with it first.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s24-first.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s24-first.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_patched docs/experiments/q4_linear_bwd_mma-s24-fwd-dbuf.diff 865a0df
    rm -rf .gl/ovr_fdb
    f="-DBM=128 -DFORWARD=1 -DCODES=1 -DBR=16 -DDBUF=1"
    src=q4_linear_bwd_mma.comp
    exp_comp fdb q4_linear_fwd_mma_c_t128 $src $f
    exp_comp fdb q4_linear_fwd_mma_c_x16_t128 $src $f -DX16=1
    exp_comp fdb q4_linear_fwd_mma_c_t128_split $src $f -DSPLIT=1
    exp_comp fdb q4_linear_fwd_mma_c_x16_t128_split $src $f -DX16=1 -DSPLIT=1
}
exp_begin "$0" "$@"
{
    echo "== q4_linear f16 forward tests, fdb"; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_fdb q4_tests f16
    for v in built fdb; do
        echo -n "$v stats: "
        ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v .gl/bin/etvk bench linear_q4gsw --m 512 --n 8192 --k 8192 --iters 2 --ceiling-mib 64 2>&1 | grep -i "fwd_mma" | tr '\n' ' '; echo
    done
    for sm in "8192 8192 512" "28672 8192 512" "8192 28672 512" "8192 8192 2048" "28672 8192 2048" "8192 28672 2048" "8192 8192 128" "8192 28672 128"; do
        set -- $sm
        for v in built fdb built fdb; do
            echo -n "$v fwd M=$3 N=$1 K=$2: "
            ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v exp_row .gl/bin/etvk bench linear_q4gsw --m $3 --n $1 --k $2
        done
    done
    for v in built fdb built fdb; do
        echo -n "$v fwd x16 M=512 8192^2: "
        ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v exp_row .gl/bin/etvk bench linear_q4gsw --m 512 --n 8192 --k 8192 --x-f16
        echo -n "$v qcs4w M=512 8192^2: "
        ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v exp_row .gl/bin/etvk bench linear_qcs4w --m 512 --n 8192 --k 8192
    done
} 2>&1 | tee "$OUT/s24-first.txt"
