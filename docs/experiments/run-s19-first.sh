#!/usr/bin/env bash
# Session 19, run 1. (a) How much an L2-resident weight would give at M = 1 (--copies 1: the
# op's 40 MiB stay in the H200's L2) against the rotating copies; (b) L2 prefetch by touch
# loads: the wide backward with NPF extra invocations that touch one word per 32-byte sector
# of the workgroup's weights and scales ahead of the computing ones (NPF = 32 / 64 / 128,
# PFD loads in flight), and the half GEMV touching the row block PFB blocks ahead (all by
# override; right on lavapipe); (c) session 18's prepared portable-tile run (BS_DB = 8).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s19-first.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s19-first.sh
# Sources: the shader switches (NPF, PFD, PFB, FIXED_LOCAL_X) are in
# docs/experiments/q4_linear_{bwd_wide,gemv_half}-s19.diff (apply to d535c4e first).
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    for npf in 32 64 128 64d16; do
        d=.gl/ovr_pf$npf; mkdir -p $d
        for cw in 8 16 32; do
            glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders -DMT=1 -DUR=2 -DPREFETCH=1 \
                -DCW=$cw -DNPF=${npf%d16} $( [ "${npf#*d}" = 16 ] && echo -DPFD=16 ) \
                -DFIXED_LOCAL_X=$((256 + ${npf%d16})) -o $d/q4_linear_bwd_wide_m1_c$cw.spv shaders/q4_linear_bwd_wide.comp
        done
    done
    for pfb in 1 2; do
        d=.gl/ovr_gpf$pfb; mkdir -p $d
        glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I shaders -DNT=512 -DPFB=$pfb \
            -o $d/q4_linear_gemv_half_n512.spv shaders/q4_linear_gemv_half.comp
    done
    cp docs/experiments/run-s19-first.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for op in linear_q4gsw linear_q4gsw_backward; do
        for c in 1 2 4; do
            echo -n "copies=$c $op M=1 8192^2: "; bench_row $op --m 1 --n 8192 --k 8192 --copies $c
        done
    done
    for v in pf32 pf64 pf128 pf64d16 gpf1 gpf2; do
        ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v .gl/bin/etvk bench \
            $( case $v in gpf*) echo linear_q4gsw ;; *) echo linear_q4gsw_backward ;; esac ) \
            --m 1 --n 8192 --k 8192 --iters 1 --ceiling-mib 64 2>&1 |
            grep -E "stats.*(wide|half)" | head -1 | sed -E "s/^.*stats (\S+) .*Register Count=([0-9]+).*/$v \1 regs \2/" || true
    done
    for shape in "8192 8192" "28672 8192" "8192 28672"; do
        set -- $shape
        for v in built pf32 pf64 pf128 pf64d16 built; do
            d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
            echo -n "$v bwd M=1 N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw_backward --m 1 --n $1 --k $2
        done
        [ "$2" = 28672 ] && continue
        for v in built gpf1 gpf2 built; do
            d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
            echo -n "$v fwd M=1 N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw --m 1 --n $1 --k $2
        done
    done
} 2>&1 | tee "$OUT/s19-first.txt"
