#!/usr/bin/env bash
# Session 16, run 1. (a) The half GEMV at M = 1 (by override): rows balanced over the
# workgroups (-DBALANCE=1: contiguous ranges of N / workgroups rows, no workgroup a block
# more than another), and timing-only forms as if rows were interleaved in pairs by half
# chunks (-DPAIRLOAD=1: one uvec4 load per two rows; =2: their scales as one vec2 too; wrong
# results, timing only). (b) The codes forward's scales: built (pair loads where the probed
# layout allows them), -DPAIRCOL=1 (pair loads unchecked), -DPAIRCOL=2 (never); the q4_linear
# tests natively, also with PAIRCOL=2 (the one-by-one path on an H200).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s16-first.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s16-first.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    g() { glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders "$@"; }
    for v in bal:-DBALANCE=1 pl1:-DPAIRLOAD=1 pl2:-DPAIRLOAD=2 balpl2:"-DBALANCE=1 -DPAIRLOAD=2"; do
        d=.gl/ovr_${v%%:*}; mkdir -p "$d"
        # shellcheck disable=SC2086
        g -O -DNT=512 ${v#*:} -o "$d/q4_linear_gemv_half_n512.spv" shaders/q4_linear_gemv_half.comp
    done
    for pc in 1 2; do
        d=.gl/ovr_pc$pc; mkdir -p "$d"
        for bm in t32x128:32 t128:128; do
            for x in ":" "x16_:-DX16=1"; do
                for sp in ":" "_split:-DSPLIT=1"; do
                    n="q4_linear_fwd_mma_c_${x%%:*}${bm%%:*}${sp%%:*}"
                    # shellcheck disable=SC2086
                    g -DFORWARD=1 -DCODES=1 -DBM=${bm#*:} -DPAIRCOL=$pc ${x#*:} ${sp#*:} \
                        -o "$d/$n.spv" shaders/q4_linear_bwd_mma.comp
                done
            done
        done
    done
    cp docs/experiments/run-s16-first.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
{
    $e bench linear_q4gsw_backward --m 32 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    q4_tests
    ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_pc2 q4_tests f16
    for r in 1 2 3; do
        for v in built bal pl1 pl2 balpl2; do
            d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
            echo -n "gemv $v #$r N=8192: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw --m 1 --n 8192 --k 8192
        done
    done
    for v in built bal pl2 balpl2; do
        d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
        echo -n "gemv $v N=28672: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw --m 1 --n 28672 --k 8192
        echo -n "qcs4w $v N=8192: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_qcs4w --m 1 --n 8192 --k 8192
    done
    echo -n "bwd M=1 N=8192: "; bench_row linear_q4gsw_backward --m 1 --n 8192 --k 8192
    for r in 1 2; do
        for v in built pc1 pc2; do
            d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
            for s in "8192 8192" "28672 8192"; do
                set -- $s
                echo -n "codes $v #$r M=512 N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw --m 512 --n $1 --k $2
            done
            echo -n "codes $v #$r x16 M=512 N=8192: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw --m 512 --n 8192 --k 8192 --x-f16
        done
    done
} 2>&1 | tee "$OUT/s16-first.txt"
