#!/usr/bin/env bash
# Session 28, run 1 (prepared in session 28; the device went away before it ran): the
# 8da4w linear's choose_qparams node with eight independent loads per round (built in
# 2521e6f, `.gl/ovr_cq`) against session 27's one load per round (`.gl/ovr_cq_old`, the
# shader of eaa15ad), both by SPIR-V override on the same binary, interleaved twice, then
# the per-node profile of each at M = 1. Session 28 measured the old node at 7.4-9.2 us
# (K = 8192) and 15.6-18.7 us (K = 28672).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s28-first.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s28-first.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    rm -rf .gl/ovr_cq .gl/ovr_cq_old
    exp_comp cq choose_qparams_rows_f32 choose_qparams_rows.comp -O -DDTYPE=float
    local old
    old=$(mktemp -d)
    git show eaa15ad:shaders/choose_qparams_rows.comp > "$old/choose_qparams_rows.comp"
    cp shaders/common.glsl "$old/"
    mkdir -p .gl/ovr_cq_old
    glslc --target-env=vulkan1.2 -fshader-stage=compute -I "$old" -O -DDTYPE=float \
        -o .gl/ovr_cq_old/choose_qparams_rows_f32.spv "$old/choose_qparams_rows.comp"
}
exp_begin "$0" "$@"
{
    for c in "1 8192 8192" "1 8192 28672" "1 4096 4096" "8 8192 8192" "32 8192 8192"; do
        set -- $c
        for v in cq_old cq cq_old cq; do
            echo -n "$v M=$1 N=$2 K=$3: "
            ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v exp_row .gl/bin/etvk bench linear_dq8ca_q4gsw \
                --m "$1" --n "$2" --k "$3"
        done
    done
    for v in cq_old cq; do
        for k in 8192 28672; do
            echo "== profile $v K=$k"
            ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v ETVK_BENCH_PROFILE=1 .gl/bin/etvk bench \
                linear_dq8ca_q4gsw --m 1 --n 8192 --k $k --iters 20 2>&1 | grep node | tail -3
        done
    done
} 2>&1 | tee "$OUT/s28-first.txt"
