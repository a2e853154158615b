#!/usr/bin/env bash
# Session 23, run 9: the tensor-core backward with its W items' scale groups found once
# before the walk (GQ = 1 in shaders/q4_linear_bwd_mma.comp; built: two divisions by gs per
# item per step in load_step), by override of the t32x128 and t128 variants; the H200's
# tensor-core q4_linear tests with it first.
# Here:   bash docs/experiments/run-s23-ninth.sh prepare (after scripts/device-bench.sh prepare)
# There:  (device tool, carry [".gl"])  bash .gl/run-s23-ninth.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    comp() { # dir, variant, defines...
        local d=.gl/ovr_$1 v=$2; shift 2; mkdir -p "$d"
        glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders "$@" \
            -o "$d/$v.spv" shaders/q4_linear_bwd_mma.comp
    }
    rm -rf .gl/ovr_gq
    comp gq q4_linear_bwd_mma_t32x128 -DBM=32 -DGQ=1
    comp gq q4_linear_bwd_mma_t32x128_split -DBM=32 -DSPLIT=1 -DGQ=1
    comp gq q4_linear_bwd_mma_t128 -DBM=128 -DBR=16 -DDBUF=1 -DGQ=1
    comp gq q4_linear_bwd_mma_t128_split -DBM=128 -DSPLIT=1 -DBR=16 -DDBUF=1 -DGQ=1
    cp docs/experiments/run-s23-ninth.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
row() { "$@" --iters 20 --ceiling-mib 1024 2>&1 |
        grep -E '^\| linear|kernels|MISMATCH|rror' | sed 's/.*kernels/kernels/' | tr '\n' ' ' || true; echo; }
{
    echo "== q4_linear tensor-core tests, gq"; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_gq q4_tests tensor_core
    for sm in "8192 28672 32" "28672 8192 32" "8192 8192 32" "8192 8192 512"; do
        set -- $sm
        for v in built gq built gq; do
            echo -n "$v bwd M=$3 N=$1 K=$2: "
            ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v row .gl/bin/etvk bench linear_q4gsw_backward --m $3 --n $1 --k $2
        done
    done
} 2>&1 | tee "$OUT/s23-ninth.txt"
