#!/usr/bin/env bash
# Session 16, run 3: the M = 1 wide backward with a lane per half chunk (-DHALF=1: 16 columns
# and 16 accumulators per lane, uvec2 loads, 16 row groups of 16 half-chunk lanes at CW = 8)
# by override of q4_linear_bwd_wide_m1_c{8,16,32}, at 264 / 396 / 528 workgroups
# (ETVK_Q4_BWD_WGS), batches of 2 (as built) or 4 rows, against the built kernel.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s16-third.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s16-third.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    for ur in 2 4; do
        d=.gl/ovr_bh$ur; mkdir -p $d
        for cw in 8 16 32; do
            glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders -DMT=1 -DUR=$ur \
                -DPREFETCH=1 -DCW=$cw -DHALF=1 -o $d/q4_linear_bwd_wide_m1_c$cw.spv \
                shaders/q4_linear_bwd_wide.comp
        done
    done
    cp docs/experiments/run-s16-third.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
{
    $e bench linear_q4gsw_backward --m 32 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for v in bh2 bh4; do
        ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v $e bench linear_q4gsw_backward --m 1 --n 8192 --k 8192 --iters 3 2>&1 | grep -E "stats.*wide_m1" | head -1 || true
    done
    for r in 1 2; do
        for s in "8192 8192" "28672 8192" "8192 28672"; do
            set -- $s
            echo -n "built #$r N=$1 K=$2: "; bench_row linear_q4gsw_backward --m 1 --n $1 --k $2
            for v in bh2 bh4; do
                for w in 264 396 528; do
                    echo -n "$v wgs=$w #$r N=$1 K=$2: "; ETVK_Q4_BWD_WGS=$w ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v bench_row linear_q4gsw_backward --m 1 --n $1 --k $2
                done
            done
        done
    done
    echo -n "fwd N=8192: "; bench_row linear_q4gsw --m 1 --n 8192 --k 8192
} 2>&1 | tee "$OUT/s16-third.txt"
