#!/usr/bin/env bash
# Session 16, run 6: the codes forward as committed in f10d375 (scales as column pairs, read
# one by one; 1099 us at M = 512 8192^2 in run 5's table) against the SPIR-V of run 1's
# PAIRCOL=2 variant (same arithmetic, 910-917 us there), PAIRCOL=1, the float-array form of
# a253b36, and the committed source compiled with -O; by override.
# Here:   bash docs/experiments/run-s16-sixth.sh prepare (after run 1's prepare made
#         .gl/ovr_pc1 and .gl/ovr_pc2)
# There:  (device tool, carry [".gl"])  bash .gl/run-s16-sixth.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    mkdir -p .gl/ovr_old .gl/ovr_O .gl/src_old
    git show a253b36:shaders/q4_linear_bwd_mma.comp > .gl/src_old/q4_linear_bwd_mma.comp
    for bm in t32x128:32 t128:128; do
        for x in ":" "x16_:-DX16=1"; do
            n="q4_linear_fwd_mma_c_${x%%:*}${bm%%:*}"
            # shellcheck disable=SC2086
            glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders -DFORWARD=1 -DCODES=1 \
                -DBM=${bm#*:} ${x#*:} -o .gl/ovr_old/$n.spv .gl/src_old/q4_linear_bwd_mma.comp
            # shellcheck disable=SC2086
            glslc --target-env=vulkan1.2 -fshader-stage=compute -O -I shaders -DFORWARD=1 -DCODES=1 \
                -DBM=${bm#*:} ${x#*:} -o .gl/ovr_O/$n.spv shaders/q4_linear_bwd_mma.comp
        done
    done
    rm -rf .gl/src_old
    cp docs/experiments/run-s16-sixth.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
{
    $e bench linear_q4gsw_backward --m 32 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for v in built pc2 old O; do
        d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
        ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=$d $e bench linear_q4gsw --m 512 --n 8192 --k 8192 --iters 3 2>&1 | grep -E "stats.*fwd_mma_c_t128" | head -1 | sed "s/^/$v: /" || true
    done
    for r in 1 2; do
        for v in built pc2 pc1 old O; do
            d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
            echo -n "$v #$r M=512 N=8192: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw --m 512 --n 8192 --k 8192
            echo -n "$v #$r M=512 N=28672: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw --m 512 --n 28672 --k 8192
            [ "$r" = 1 ] || continue
            echo -n "$v #$r x16 M=512 N=8192: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw --m 512 --n 8192 --k 8192 --x-f16
            echo -n "$v #$r M=2048 N=8192: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw --m 2048 --n 8192 --k 8192
        done
    done
} 2>&1 | tee "$OUT/s16-sixth.txt"
