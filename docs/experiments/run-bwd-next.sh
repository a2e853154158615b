#!/usr/bin/env bash
# Session 11's first device run (docs/status.md, Next 0-1): the q4_linear tests on the H200
# (commit c86c802's fp32 adds of each fragment product: first GPU run), the backward's time
# and sampled error at M = 32 / 512, the double-buffered M = 32 experiment, and the forward at
# M = 2048 with other launch-order blocks (MB).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-bwd-next.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-bwd-next.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cargo test --release -p etvk-runtime --test q4_linear --no-run
    rm -f .gl/bin/q4_linear-*
    t=$(ls -t target/release/deps/q4_linear-* | grep -v '\.d$' | head -1)
    cp "$t" .gl/bin/
    mkdir -p .gl/exp/dbuf
    src=docs/experiments/q4_linear_bwd_mma_dbuf.comp
    glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I shaders \
        -o .gl/exp/dbuf/q4_linear_bwd_mma_t32x128.spv $src
    glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I shaders -DSPLIT=1 \
        -o .gl/exp/dbuf/q4_linear_bwd_mma_t32x128_split.spv $src
    # The default kernel with one step of loads in flight, with and without glslc -O: fewer
    # registers (98 with -O at DEPTH = 1, 112 at 2) might fit 3 workgroups per SM (<= 85).
    mkdir -p .gl/exp/dep1 .gl/exp/dep1O0
    for v in "t32x128:-DBM=32" "t32x128_split:-DBM=32 -DSPLIT=1"; do
        # shellcheck disable=SC2086
        glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I shaders ${v#*:} -DDEPTH=1 \
            -o .gl/exp/dep1/q4_linear_bwd_mma_${v%%:*}.spv shaders/q4_linear_bwd_mma.comp
        # shellcheck disable=SC2086
        glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders ${v#*:} -DDEPTH=1 \
            -o .gl/exp/dep1O0/q4_linear_bwd_mma_${v%%:*}.spv shaders/q4_linear_bwd_mma.comp
    done
    # M <= 16 with 16-row tiles (the 32-row variants' launch has the same single row tile).
    mkdir -p .gl/exp/t16
    for v in "t32x128:" "t32x128_split:-DSPLIT=1"; do
        # shellcheck disable=SC2086
        glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I shaders -DBM=16 ${v#*:} \
            -o .gl/exp/t16/q4_linear_bwd_mma_${v%%:*}.spv shaders/q4_linear_bwd_mma.comp
    done
    # The forward at M = 2048 (26-28 TFLOP/s against 54 at M = 512): other launch-order
    # blocks of row tiles (the built kernel: MB = 8).
    for mb in 2 4 16 32; do
        mkdir -p .gl/exp/mb$mb
        glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I shaders -DMF=4 -DSTEP=2 \
            -DMB=$mb -o .gl/exp/mb$mb/q4_linear_mma_f4.spv shaders/q4_linear_mma.comp
    done
    cp docs/experiments/run-bwd-next.sh .gl/run-bwd-next.sh
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
row() {
    $e bench linear_q4gsw_backward "$@" --iters 20 2>&1 |
        grep -E '^\| linear|check|rror|bwd_mma.*Register' | tr '\n' ' ' | sed 's/.*check/check/' || true
    echo
}
{
    # A cold first bench ran 3.6x slow (session 10): warm up.
    $e bench linear_q4gsw_backward --m 32 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    # The tests force validation on: the layer comes from .gl (device-bench.sh prepare).
    for t in .gl/bin/q4_linear-*; do "$t" --test-threads=1 2>&1 | grep -v ' \.\.\. ok$' | head -80 || true; done
    for s in "32 8192 8192" "32 28672 8192" "32 8192 28672" "512 8192 8192" "512 28672 8192" "64 8192 8192"; do
        set -- $s
        echo -n "default M=$1 N=$2 K=$3: "; row --m $1 --n $2 --k $3
        echo -n "portable M=$1 N=$2 K=$3: "; ETVK_Q4_MMA=0 row --m $1 --n $2 --k $3
        if [ "$1" -le 64 ]; then
            for v in dbuf dep1 dep1O0; do
                echo -n "$v M=$1 N=$2 K=$3: "
                ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=$PWD/.gl/exp/$v row --m $1 --n $2 --k $3
            done
        fi
    done
    for s in "16 8192 8192" "16 28672 8192" "16 8192 28672"; do
        set -- $s
        echo -n "forward M=$1 N=$2 K=$3: "
        $e bench linear_q4gsw --m $1 --n $2 --k $3 --iters 20 2>&1 | grep -E '^\| linear|rror' | tr '\n' ' ' || true
        echo
        echo -n "default M=$1 N=$2 K=$3: "; row --m $1 --n $2 --k $3
        echo -n "t16 M=$1 N=$2 K=$3: "
        ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=$PWD/.gl/exp/t16 row --m $1 --n $2 --k $3
    done
    for s in "2048 28672 8192" "2048 8192 28672" "2048 8192 8192"; do
        set -- $s
        for v in "" mb2 mb4 mb16 mb32; do
            echo -n "forward ${v:-mb8} M=$1 N=$2 K=$3: "
            f=(env)
            [ -n "$v" ] && f+=("ETVK_SPIRV_OVERRIDE_DIR=$PWD/.gl/exp/$v")
            "${f[@]}" $e bench linear_q4gsw --m $1 --n $2 --k $3 --iters 5 2>&1 |
                grep -E '^\| linear|rror' | tr '\n' ' ' || true
            echo
        done
    done
} 2>&1 | tee "$OUT/bwd-next.txt"
