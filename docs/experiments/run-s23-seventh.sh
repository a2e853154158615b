#!/usr/bin/env bash
# Session 23, run 7: the 32 x 128 tensor-core backward with steps of 64 rows (BR = 64 in
# shaders/q4_linear_bwd_mma.comp; 48400 bytes of shared memory): runs 4 and 6 found its
# per-step fixed part (two barriers, a load latency) large (BR = 16: 120 -> 156 us at
# 8192^2 M = 32); half as many steps. By override of q4_linear_bwd_mma_t32x128{,_split};
# first the H200's tensor-core q4_linear tests with it.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s23-seventh.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s23-seventh.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    comp() { # dir, variant, defines...
        local d=.gl/ovr_$1 v=$2; shift 2; mkdir -p "$d"
        glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders "$@" \
            -o "$d/$v.spv" shaders/q4_linear_bwd_mma.comp
    }
    rm -rf .gl/ovr_br64
    comp br64 q4_linear_bwd_mma_t32x128 -DBM=32 -DBR=64
    comp br64 q4_linear_bwd_mma_t32x128_split -DBM=32 -DSPLIT=1 -DBR=64
    cp docs/experiments/run-s23-seventh.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
row() { "$@" --iters 20 --ceiling-mib 1024 2>&1 |
        grep -E '^\| linear|kernels|MISMATCH|rror' | sed 's/.*kernels/kernels/' | tr '\n' ' ' || true; echo; }
{
    echo "== q4_linear tensor-core tests, br64"; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_br64 q4_tests tensor_core
    ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_br64 q4_tests dynamic_m
    for sm in "8192 28672 32" "28672 8192 32" "8192 8192 32" "8192 8192 16" "8192 8192 64" "8192 28672 64" "28672 8192 16"; do
        set -- $sm
        echo -n "fwd M=$3 N=$1 K=$2: "; row .gl/bin/etvk bench linear_q4gsw --m $3 --n $1 --k $2
        for v in built br64 built br64; do
            echo -n "$v bwd M=$3 N=$1 K=$2: "
            ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v row .gl/bin/etvk bench linear_q4gsw_backward --m $3 --n $1 --k $2
        done
    done
} 2>&1 | tee "$OUT/s23-seventh.txt"
