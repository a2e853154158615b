#!/usr/bin/env bash
# Session 17, run 1: the int8 tensor-core forward with operands from registers / global
# memory (docs/experiments/q4_linear_mma_reg.comp) against the built q4_linear_mma_f*, by
# override: REGA = 1 (A written element by element), REGA = 0 (A through a private shared
# tile), r2 = REGA 1 with the next chunk's limbs prefetched (PREB = 1); the q4_linear tests with each override, then M = 8 / 16 / 32 benches.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s17-first.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s17-first.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    for v in r0:"-DREGA=0" r1:"-DREGA=1" r2:"-DREGA=1 -DPREB=1"; do
        mkdir -p .gl/ovr_${v%%:*}
        for mf in 1 2 4; do
            # shellcheck disable=SC2086
            glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I shaders -DMF=$mf ${v#*:} \
                -o .gl/ovr_${v%%:*}/q4_linear_mma_f$mf.spv docs/experiments/q4_linear_mma_reg.comp
        done
    done
    cp docs/experiments/run-s17-first.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
{
    $e bench linear_q4gsw --m 8 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for v in r1; do
        echo "== tests $v"
        ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v q4_tests tensor_core_forward 2>&1 | tail -5
    done
    for v in built r1 r0 r2; do
        d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
        for m in 8 16 32; do
            ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=$d $e bench linear_q4gsw --m $m --n 8192 --k 8192 --iters 3 2>&1 | grep -E "stats.*mma_f" | head -1 | sed "s/^/$v M=$m: /" || true
        done
    done
    for v in built r1 r0 r2; do
        d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
        for shape in "8192 8192" "28672 8192" "8192 28672"; do
            set -- $shape
            for m in 8 16 32; do
                echo -n "$v M=$m N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw --m $m --n $1 --k $2
            done
        done
        echo -n "$v qcs4w M=8: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_qcs4w --m 8 --n 8192 --k 8192
    done
    for v in built r1 r0 r2; do
        d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
        for m in 2 4; do
            echo -n "$v mma M=$m: "; ETVK_Q4_MMA_M=2 ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw --m $m --n 8192 --k 8192
            echo -n "$v mma M=$m N=28672: "; ETVK_Q4_MMA_M=2 ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw --m $m --n 28672 --k 8192
        done
    done
    for m in 2 4; do
        echo -n "gemv M=$m: "; bench_row linear_q4gsw --m $m --n 8192 --k 8192
    done
    for w in 528 1056; do
        for m in 8 32; do
            echo -n "r1 wgs=$w M=$m: "; ETVK_Q4_MMA_WGS=$w ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_r1 bench_row linear_q4gsw --m $m --n 8192 --k 8192
            echo -n "r1 wgs=$w M=$m N=28672: "; ETVK_Q4_MMA_WGS=$w ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_r1 bench_row linear_q4gsw --m $m --n 28672 --k 8192
        done
    done
} 2>&1 | tee "$OUT/s17-first.txt"
