#!/usr/bin/env bash
# Session 23, run 4: the tensor-core backward with double-buffered shared tiles (DBUF = 1 in
# shaders/q4_linear_bwd_mma.comp: two sets of the step's tiles, one barrier per step instead
# of two; steps of BR = 16 rows, since two sets of 32 pass 48 KiB), against BR = 16 alone
# (br16) and the built kernels, by override; the binary of 69f4f71 (.gl/bin/etvk-old) for
# the built kernels before the switch went in. First the H200's q4_linear tests of the
# tensor-core backward with the dbuf override (f64 references, self-check).
# Here:   scripts/device-bench.sh prepare && cp OLD_ETVK .gl/bin/etvk-old &&
#         bash docs/experiments/run-s23-fourth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s23-fourth.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    comp() { # dir, variant, defines...
        local d=.gl/ovr_$1 v=$2; shift 2; mkdir -p "$d"
        glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders "$@" \
            -o "$d/$v.spv" shaders/q4_linear_bwd_mma.comp
    }
    rm -rf .gl/ovr_dbuf .gl/ovr_br16
    for bm in t32x128:32 t128:128; do
        n=${bm%%:*}; b=${bm##*:}
        comp dbuf q4_linear_bwd_mma_$n -DBM=$b -DBR=16 -DDBUF=1
        comp dbuf q4_linear_bwd_mma_${n}_split -DBM=$b -DSPLIT=1 -DBR=16 -DDBUF=1
        comp br16 q4_linear_bwd_mma_$n -DBM=$b -DBR=16
        comp br16 q4_linear_bwd_mma_${n}_split -DBM=$b -DSPLIT=1 -DBR=16
    done
    cp docs/experiments/run-s23-fourth.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
row() { local bin=$1; shift
    $bin bench "$@" --iters 20 --ceiling-mib 1024 2>&1 |
        grep -E '^\| linear|kernels|MISMATCH|rror' | sed 's/.*kernels/kernels/' | tr '\n' ' ' || true; echo; }
{
    echo "== q4_linear tensor-core tests with the dbuf override"
    ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_dbuf q4_tests tensor_core
    ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_dbuf q4_tests dynamic_m
    for shape in "8192 28672" "28672 8192" "8192 8192"; do
        set -- $shape
        for m in 32 16 64; do
            echo -n "fwd M=$m N=$1 K=$2: "; row .gl/bin/etvk linear_q4gsw --m $m --n $1 --k $2
            for v in old built dbuf br16 dbuf built; do
                echo -n "$v bwd M=$m N=$1 K=$2: "
                case $v in
                    old) row .gl/bin/etvk-old linear_q4gsw_backward --m $m --n $1 --k $2 ;;
                    built) row .gl/bin/etvk linear_q4gsw_backward --m $m --n $1 --k $2 ;;
                    *) ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v row .gl/bin/etvk linear_q4gsw_backward --m $m --n $1 --k $2 ;;
                esac
            done
        done
    done
    for v in built dbuf built; do
        echo -n "$v bwd M=512 8192^2: "
        ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v row .gl/bin/etvk linear_q4gsw_backward --m 512 --n 8192 --k 8192
    done
} 2>&1 | tee "$OUT/s23-fourth.txt"
