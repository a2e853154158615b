#!/usr/bin/env bash
# Session 11, run 2: the tensor-core backward (commit c86c802: each fragment product added in
# fp32) compiled without glslc -O, DEPTH 1 and 2, and the double-buffered experiment without
# -O (run 1: with -O the M = 32 kernel takes 227.6 us, without 156.5); the forward at M = 2048
# with the embedded kernel timed again after an override (run 1: 32.2 ms, the overrides 17.7).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s11-o0.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s11-o0.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    c="glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders"
    for d in 1 2; do
        mkdir -p .gl/exp/o0d$d
        for v in "t32x128:-DBM=32" "t32x128_split:-DBM=32 -DSPLIT=1" "t128:-DBM=128" "t128_split:-DBM=128 -DSPLIT=1"; do
            # shellcheck disable=SC2086
            $c ${v#*:} -DDEPTH=$d -o .gl/exp/o0d$d/q4_linear_bwd_mma_${v%%:*}.spv shaders/q4_linear_bwd_mma.comp
        done
    done
    mkdir -p .gl/exp/dbufO0
    $c -o .gl/exp/dbufO0/q4_linear_bwd_mma_t32x128.spv docs/experiments/q4_linear_bwd_mma_dbuf.comp
    $c -DSPLIT=1 -o .gl/exp/dbufO0/q4_linear_bwd_mma_t32x128_split.spv docs/experiments/q4_linear_bwd_mma_dbuf.comp
    mkdir -p .gl/exp/mb32
    glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I shaders -DMF=4 -DSTEP=2 -DMB=32 \
        -o .gl/exp/mb32/q4_linear_mma_f4.spv shaders/q4_linear_mma.comp
    cp docs/experiments/run-s11-o0.sh .gl/run-s11-o0.sh
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
row() {
    $e bench linear_q4gsw_backward "$@" --iters 20 2>&1 |
        grep -E '^\| linear|check|rror|bwd_mma.*Register|warn' | tr '\n' ' ' | sed 's/.*check/check/' || true
    echo
}
{
    $e bench linear_q4gsw_backward --m 32 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for s in "32 8192 8192" "32 28672 8192" "32 8192 28672" "16 8192 8192" "64 8192 8192" \
             "128 8192 8192" "512 8192 8192" "512 28672 8192" "512 8192 28672" "2048 8192 8192"; do
        set -- $s
        for v in o0d1 o0d2 dbufO0; do
            [ "$v" = dbufO0 ] && [ "$1" -gt 64 ] && continue
            echo -n "$v M=$1 N=$2 K=$3: "
            ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=$PWD/.gl/exp/$v row --m $1 --n $2 --k $3
        done
    done
    for s in "2048 28672 8192" "2048 8192 28672"; do
        set -- $s
        for v in embedded mb32 embedded; do
            echo -n "forward $v M=$1 N=$2 K=$3: "
            f=(env)
            [ "$v" != embedded ] && f+=("ETVK_SPIRV_OVERRIDE_DIR=$PWD/.gl/exp/$v")
            "${f[@]}" $e bench linear_q4gsw --m $1 --n $2 --k $3 --iters 5 2>&1 |
                grep -E '^\| linear|rror' | tr '\n' ' ' || true
            echo
        done
    done
} 2>&1 | tee "$OUT/s11-o0.txt"
