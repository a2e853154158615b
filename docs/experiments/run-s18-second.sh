#!/usr/bin/env bash
# Session 18, run 2 (device run 3): the portable tiled GEMM with double-buffered shared tiles
# (shaders/q4_linear_tiled.comp DBUF = 1: 16-row steps, the next step's loads in registers
# during the FMAs, one barrier per step) against the built kernels, by override, with the
# tensor cores off (ETVK_Q4_MMA=0); registers; the q4_linear tests with the override.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s18-second.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s18-second.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    mkdir -p .gl/ovr_dbuf
    for bwd in fwd:0 bwd:1; do for tile in t32x128:32 t64:64 t128:128; do for sp in "":0 _split:1; do
        n="q4_linear_tiled_${bwd%%:*}_${tile%%:*}${sp%%:*}"
        glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I shaders -DBWD=${bwd##*:} \
            -DTILE=${tile##*:} -DSPLIT=${sp##*:} -DDBUF=1 -o .gl/ovr_dbuf/$n.spv shaders/q4_linear_tiled.comp
    done; done; done
    cp docs/experiments/run-s18-second.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
export ETVK_Q4_MMA=0
{
    .gl/bin/etvk bench linear_q4gsw --m 512 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for op in linear_q4gsw linear_q4gsw_backward; do
        for v in built dbuf; do
            d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
            ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=$d .gl/bin/etvk bench $op --m 512 --n 8192 --k 8192 --iters 3 2>&1 |
                grep -E "stats.*tiled" | head -2 | sed "s/^/$v: /" || true
        done
    done
    for r in 1 2; do
        for shape in "8192 8192" "28672 8192" "8192 28672"; do
            set -- $shape
            for m in 512 128 32; do
                [ "$r" = 2 ] && [ "$m" != 512 ] && continue
                for op in linear_q4gsw linear_q4gsw_backward; do
                    for v in built dbuf; do
                        d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
                        echo -n "$v $op M=$m N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row $op --m $m --n $1 --k $2
                    done
                done
            done
        done
    done
    for v in built dbuf; do
        d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
        echo -n "$v M=2048 8192^2: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw --m 2048 --n 8192 --k 8192
    done
    echo "== q4_linear tests with dbuf"
    ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_dbuf q4_tests 2>&1 | tail -6
} 2>&1 | tee "$OUT/s18-second.txt"
