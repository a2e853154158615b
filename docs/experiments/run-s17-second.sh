#!/usr/bin/env bash
# (The DEC switch is now docs/experiments/q4_linear_bwd_wide-dec.diff: apply it first.)
# Session 17, run 2: the M = 1 wide backward with fp16 decodes (shaders/q4_linear_bwd_wide.comp
# DEC = 1: codes as fp16 subnormals; DEC = 2: as 1 + c / 16) against the built magic decode,
# by override; two rounds; the forward M = 1 for the ratio; the backward tests with DEC = 1.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s17-second.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s17-second.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    for d in 1 2; do
        mkdir -p .gl/ovr_d$d
        for cw in 8 16 32; do
            glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders -DMT=1 -DUR=2 -DPREFETCH=1 \
                -DCW=$cw -DDEC=$d -o .gl/ovr_d$d/q4_linear_bwd_wide_m1_c$cw.spv shaders/q4_linear_bwd_wide.comp
        done
    done
    cp docs/experiments/run-s17-second.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
{
    $e bench linear_q4gsw_backward --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for v in built d1 d2; do
        d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
        ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=$d $e bench linear_q4gsw_backward --m 1 --n 8192 --k 8192 --iters 3 2>&1 | grep -E "stats.*bwd_wide" | head -1 | sed "s/^/$v: /" || true
    done
    for r in 1 2; do
        for shape in "8192 8192" "28672 8192" "8192 28672" "4096 4096"; do
            set -- $shape
            echo -n "fwd N=$1 K=$2: "; bench_row linear_q4gsw --m 1 --n $1 --k $2
            for v in built d1 d2; do
                d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
                echo -n "$v N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw_backward --m 1 --n $1 --k $2
            done
        done
    done
    echo "== tests d1"
    ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_d1 q4_tests backward 2>&1 | tail -4
    echo "== tests d2"
    ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_d2 q4_tests backward 2>&1 | tail -4
} 2>&1 | tee "$OUT/s17-second.txt"
