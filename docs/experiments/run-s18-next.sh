#!/usr/bin/env bash
# Prepared in session 18, not run yet: the double-buffered portable tiles with 8-row steps
# (BS_DB = 8 in shaders/q4_linear_tiled.comp: half the unrolled FMA block and half the
# prefetch registers; the built form takes 16-row steps at 163-169 registers, one workgroup
# per SM) by override, tensor cores off: registers, then M = 512 at three shapes and
# M = 64 / 128 at 8192^2, forward and backward. Goal: <= 128 registers (two per SM) and the
# 40 TFLOP/s target. Right on lavapipe (all q4_linear tests by override).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s18-next.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s18-next.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    mkdir -p .gl/ovr_bs8
    for bwd in fwd:0 bwd:1; do for tile in t32x128:32 t64:64 t128:128; do for sp in "":0 _split:1; do
        n="q4_linear_tiled_${bwd%%:*}_${tile%%:*}${sp%%:*}"
        glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I shaders -DBWD=${bwd##*:} \
            -DTILE=${tile##*:} -DSPLIT=${sp##*:} -DDBUF=1 -DBS_DB=8 -o .gl/ovr_bs8/$n.spv shaders/q4_linear_tiled.comp
    done; done; done
    cp docs/experiments/run-s18-next.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
export ETVK_Q4_MMA=0
{
    .gl/bin/etvk bench linear_q4gsw --m 512 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for v in built bs8; do
        d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
        for op in linear_q4gsw linear_q4gsw_backward; do
            ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=$d .gl/bin/etvk bench $op --m 512 --n 8192 --k 8192 --iters 1 --ceiling-mib 64 2>&1 |
                grep -E "stats.*tiled" | head -1 | sed -E "s/^.*stats (\S+) .*Register Count=([0-9]+).*/$v \1 regs \2/" || true
        done
    done
    for shape in "8192 8192 512" "28672 8192 512" "8192 28672 512" "8192 8192 128" "8192 8192 64"; do
        set -- $shape
        for op in linear_q4gsw linear_q4gsw_backward; do
            for v in built bs8; do
                d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
                echo -n "$v $op M=$3 N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row $op --m $3 --n $1 --k $2
            done
        done
    done
} 2>&1 | tee "$OUT/s18-next.txt"
