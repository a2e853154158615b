#!/usr/bin/env bash
# Session 13, run 2: the tensor-core backward with its weight-scale peaks prepacked (binding
# 5, no per-workgroup scan of the slice's scales) on the H200: the q4_linear tests (real
# kernels and the self-check), then M = 16 / 32 / 64 / 512 beside the forward, and the
# STEP_CHAIN = 1 experiment (six MMAs per fresh tile; since removed from the shader: it is in
# commit c6fb1f3's) by ETVK_SPIRV_OVERRIDE_DIR.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s13-peaks.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s13-peaks.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cargo test --release -p etvk-runtime --test q4_linear --no-run
    rm -f .gl/bin/q4_linear-*
    t=$(ls -t target/release/deps/q4_linear-* | grep -v '\.d$' | head -1)
    cp "$t" .gl/bin/
    rm -rf .gl/exp13; mkdir -p .gl/exp13/chain
    for v in "t32x128:-DBM=32" "t32x128_split:-DBM=32 -DSPLIT=1" "t128:-DBM=128" "t128_split:-DBM=128 -DSPLIT=1"; do
        # shellcheck disable=SC2086
        glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders ${v#*:} -DSTEP_CHAIN=1 \
            -o .gl/exp13/chain/q4_linear_bwd_mma_${v%%:*}.spv shaders/q4_linear_bwd_mma.comp
    done
    cp docs/experiments/run-s13-peaks.sh .gl/run-s13-peaks.sh
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
row() {
    $e bench "$@" --iters 20 --ceiling-mib 1024 2>&1 |
        grep -E '^\| linear|check|rror|warn|bwd_mma.*Register' | tr '\n' ' ' | sed 's/.*check/check/' || true
    echo
}
{
    $e bench linear_q4gsw_backward --m 32 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for t in .gl/bin/q4_linear-*; do timeout 120 "$t" --test-threads=2 2>&1 | grep -v ' \.\.\. ok$' | head -60 || true; done
    for s in "32 8192 8192" "32 28672 8192" "32 8192 28672" "512 8192 8192" "512 28672 8192" "512 8192 28672" "16 8192 8192" "64 8192 8192"; do
        set -- $s
        if [ "$1" = 32 ] || [ "$1" = 512 ]; then
            echo -n "forward M=$1 N=$2 K=$3: "; row linear_q4gsw --m $1 --n $2 --k $3
        fi
        echo -n "peaks M=$1 N=$2 K=$3: "; ETVK_PIPELINE_STATS=1 row linear_q4gsw_backward --m $1 --n $2 --k $3
        echo -n "chain M=$1 N=$2 K=$3: "
        ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=$PWD/.gl/exp13/chain row linear_q4gsw_backward --m $1 --n $2 --k $3
    done
    nvidia-smi --query-gpu=clocks.sm,power.draw,clocks_throttle_reasons.active --format=csv || true
} 2>&1 | tee "$OUT/s13-run2.txt"
