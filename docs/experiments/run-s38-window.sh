#!/usr/bin/env bash
# Session 38: what the row's broadcast from L2 into every workgroup costs the M = 1 half
# GEMVs. Each of the 264 persistent workgroups reads the whole activation row (32 KiB at
# K = 8192: 8.4 MB from L2 at the launch's start), and `_dq_norm` the norm's weights as well
# (twice that). Diagnostic overrides (wrong results on purpose, time only;
# q4_linear_gemv_half-s38-window.diff): XWIN reads x from its first 64 vec4s, NWWIN the
# norm's weights likewise. If the weight-only GEMV at 8192^2 drops by ~1 us with XWIN, a
# form that reads the row fewer times (workgroups sharing it) is worth building; if the
# norm form's extra 1.3-2.2 us (H200, run-s37-second) go with NWWIN, its cause is the same.
# Beside them the first such form (PAIR, right on lavapipe). Outcome (session 38 run 4, H100:
# docs/performance.md): the windows change nothing, PAIR staged is 1.0-1.8 us slower.
# The norm rows print the profile's node times too (the norm node's, where it runs).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s38-window.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s38-window.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_patched docs/experiments/q4_linear_gemv_half-s38-window.diff
    local src=q4_linear_gemv_half.comp
    exp_comp x q4_linear_gemv_half $src -O -DXWIN=1
    exp_comp x q4_linear_gemv_half_dq $src -O -DDQ=1 -DXWIN=1
    for v in x nw both; do
        case $v in x) f="-DXWIN=1" ;; nw) f="-DNWWIN=1" ;; both) f="-DXWIN=1 -DNWWIN=1" ;; esac
        exp_comp $v q4_linear_gemv_half_dq_norm $src -O -DDQ=1 -DNORM=1 $f
        exp_comp $v q4_linear_gemv_half_early_dq_norm $src -O -DDQ=1 -DNORM=1 -DEARLY=1 $f
    done
    EXP_SHADERS=shaders
    # PAIR (q4_linear_gemv_half-s38-pair.diff): workgroups of twice the width (one per SM),
    # two halves that read the row once, staged in shared memory (pair) or each from global
    # memory (pairg); launched as such with ETVK_Q4_HALF_PAIR=1, which needs the runtime
    # built with q4_linear-s38-pair-runtime.diff applied (as it was for run 4 at 5d831ca).
    exp_patched docs/experiments/q4_linear_gemv_half-s38-pair.diff
    exp_comp pair q4_linear_gemv_half $src -O -DPAIR=1
    exp_comp pairg q4_linear_gemv_half $src -O -DPAIR=1 -DPAIR_STAGE=0
    EXP_SHADERS=shaders
    rm -f .gl/bin/*
    cp target/release/etvk .gl/bin/
    strip .gl/bin/etvk
    gzip -9 -f .gl/bin/etvk
}
exp_begin "$0" "$@"
ovr() {
    case $1 in
        built) echo "ETVK_X=1" ;;
        pair*) echo "ETVK_Q4_HALF_PAIR=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$1" ;;
        *) echo "ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$1" ;;
    esac
}
{
    nvidia-smi --query-gpu=name --format=csv,noheader || true
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 20 > /dev/null 2>&1 || true
    for v in built pair; do
        env $(ovr $v) ETVK_PIPELINE_STATS=1 .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 \
            --iters 5 --ceiling-mib 64 2>&1 | grep -E 'pipeline stats q4_linear_gemv_half ' || true
    done
    echo "== weight-only M = 1: built / x from a 1 KiB window / pairs (staged, global)"
    for shape in "8192 8192" "2112 8192" "28672 8192" "4096 4096" "14336 4096"; do
        set -- $shape
        for v in built x pair pairg built x pair pairg; do
            echo -n "$v q4gsw N=$1 K=$2: "
            env $(ovr $v) ETVK_SELF_CHECKS=0 .gl/bin/etvk bench linear_q4gsw --m 1 --n "$1" --k "$2" \
                --iters 20 --ceiling-mib 1024 2>&1 | grep -E '^\| linear|kernels' |
                sed 's/.*check/check/' | tr '\n' ' ' || true
            echo
        done
    done
    echo "== 8da4w M = 1, x copied (ETVK_ROW_RANGE=off: _dq): built / x window"
    for v in built x built x; do
        echo -n "$v dq N=8192 K=8192: "
        env $(ovr $v) ETVK_ROW_RANGE=off .gl/bin/etvk bench linear_dq8ca_q4gsw --m 1 --n 8192 --k 8192 \
            --x-from copy --iters 20 --ceiling-mib 1024 2>&1 | grep -E '^\| linear' | tr '\n' ' ' || true
        echo
    done
    echo "== 8da4w M = 1, x from a norm: node (_dq_mm) / inside built / x window / weights window / both"
    for shape in "8192 8192" "4096 4096" "14336 4096"; do
        set -- $shape
        for v in node built x nw both node built x nw both; do
            echo -n "$v norm N=$1 K=$2: "
            e="ETVK_NORM_GEMV=all $(ovr $v)"
            [ $v = node ] && e="ETVK_NORM_GEMV=0"
            env $e ETVK_BENCH_PROFILE=1 .gl/bin/etvk bench linear_dq8ca_q4gsw --m 1 --n "$1" --k "$2" \
                --x-from norm --iters 20 --ceiling-mib 1024 2>&1 |
                grep -E 'node (et_vk.rms_norm|et_vk.linear)|^\| linear' | sed 's/^ *//' | tr '\n' ' ' || true
            echo
        done
    done
} 2>&1 | tee "$OUT/s38-window.txt"
