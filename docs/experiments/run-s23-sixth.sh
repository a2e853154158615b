#!/usr/bin/env bash
# Session 23, run 6: the 32 x 128 tensor-core backward (M = 9..64; backward / forward at
# M = 32 0.78-0.80 on the long shapes since the forward's row-quad gain) with two sets of
# step tiles, by override of q4_linear_bwd_mma_t32x128{,_split} (switches in the shader):
#   d2    DBUF = 1, BR = 16, DEPTH = 2 (run 4's DBUF with two steps of loads in flight)
#   np32  DBUF = 1, BR = 32, APAD = 0 (unpadded A tiles: the two sets of 32-row steps then fit
#         48 KiB, 47376 bytes; too much for lavapipe's 32 KiB)
# First the H200's tensor-core q4_linear tests with each override.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s23-sixth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s23-sixth.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    comp() { # dir, variant, defines...
        local d=.gl/ovr_$1 v=$2; shift 2; mkdir -p "$d"
        glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders "$@" \
            -o "$d/$v.spv" shaders/q4_linear_bwd_mma.comp
    }
    rm -rf .gl/ovr_d2 .gl/ovr_np32
    comp d2 q4_linear_bwd_mma_t32x128 -DBM=32 -DBR=16 -DDBUF=1 -DDEPTH=2
    comp d2 q4_linear_bwd_mma_t32x128_split -DBM=32 -DSPLIT=1 -DBR=16 -DDBUF=1 -DDEPTH=2
    comp np32 q4_linear_bwd_mma_t32x128 -DBM=32 -DDBUF=1 -DAPAD=0
    comp np32 q4_linear_bwd_mma_t32x128_split -DBM=32 -DSPLIT=1 -DDBUF=1 -DAPAD=0
    cp docs/experiments/run-s23-sixth.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
row() { $@ --iters 20 --ceiling-mib 1024 2>&1 |
        grep -E '^\| linear|kernels|MISMATCH|rror' | sed 's/.*kernels/kernels/' | tr '\n' ' ' || true; echo; }
{
    for v in d2 np32; do
        echo "== q4_linear tensor-core tests, $v"; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v q4_tests tensor_core
    done
    for sm in "8192 28672 32" "28672 8192 32" "8192 8192 32" "8192 8192 16" "8192 8192 64" "8192 28672 64"; do
        set -- $sm
        echo -n "fwd M=$3 N=$1 K=$2: "; row .gl/bin/etvk bench linear_q4gsw --m $3 --n $1 --k $2
        for v in built d2 np32 built; do
            echo -n "$v bwd M=$3 N=$1 K=$2: "
            ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v row .gl/bin/etvk bench linear_q4gsw_backward --m $3 --n $1 --k $2
        done
    done
} 2>&1 | tee "$OUT/s23-sixth.txt"
