#!/usr/bin/env bash
# Session 16, run 2: a lane per weight row for M = 2..8 (docs/experiments/q4_linear_gemv_rows.comp,
# in place of q4_linear_gemv_m{2,4,8} by override, forced with ETVK_Q4_GEMV=lanes) against
# the built choice (persistent int8 GEMV at M = 2..7, int8 MMA at M = 8).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s16-second.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s16-second.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    mkdir -p .gl/ovr_rows
    for mt in 2 4 8; do
        glslc --target-env=vulkan1.2 -fshader-stage=compute -O -I shaders -DMT=$mt \
            -o .gl/ovr_rows/q4_linear_gemv_m$mt.spv docs/experiments/q4_linear_gemv_rows.comp
    done
    cp docs/experiments/run-s16-second.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
{
    $e bench linear_q4gsw_backward --m 32 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for s in "8192 8192" "28672 8192"; do
        set -- $s
        for m in 8 4 2; do
            echo -n "built M=$m N=$1 K=$2: "; bench_row linear_q4gsw --m $m --n $1 --k $2
            echo -n "rows M=$m N=$1 K=$2: "; ETVK_Q4_GEMV=lanes ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_rows bench_row linear_q4gsw --m $m --n $1 --k $2
        done
    done
    echo -n "lanes M=8 N=8192: "; ETVK_Q4_GEMV=lanes bench_row linear_q4gsw --m 8 --n 8192 --k 8192
    echo -n "qcs4w built M=8 N=8192: "; bench_row linear_qcs4w --m 8 --n 8192 --k 8192
    echo -n "qcs4w rows M=8 N=8192: "; ETVK_Q4_GEMV=lanes ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_rows bench_row linear_qcs4w --m 8 --n 8192 --k 8192
    ETVK_PIPELINE_STATS=1 ETVK_Q4_GEMV=lanes ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_rows $e bench linear_q4gsw --m 8 --n 8192 --k 8192 --iters 3 2>&1 | grep -E "stats.*gemv_m8" | head -2 || true
} 2>&1 | tee "$OUT/s16-second.txt"
