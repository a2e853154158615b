#!/usr/bin/env bash
# Session 32, run 2: run 1 (H100) found the FMA GEMV latency-bound (M = 2 at 8192^2: 31.0 us,
# 1.08 TB/s, against the int8 GEMV's 23.1): its persistent wave of two 256-invocation
# workgroups per SM keeps 16 warps of 4 one-word loads in flight. Here: the wave
# (`ETVK_Q4_WIDE_WGS` = 264 / 528 / 1056) times the rows per batch (UR = 4 built, 8 by
# override), against the kernels it replaces (`ETVK_Q4_FMA=0`); then the fault record's A/B
# (run-s31-first.sh, whose `etvk check` needs libetvk.so beside the binaries).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s32-second.sh prepare
#         (and run-s31-first.sh prepare)
# There:  (device tool, carry [".gl"])  bash .gl/run-s32-second.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    local mt
    for mt in 2 4 8; do
        exp_comp ur8 "q4_linear_gemv_fma_m$mt" q4_linear_gemv_fma.comp -O -DMT=$mt -DUR=8
    done
}
exp_begin "$0" "$@"
{
    .gl/bin/etvk bench read --ceiling-mib 1024 2>&1 | grep -E 'ceiling' || true
    .gl/bin/etvk bench linear_q4gsw --m 8 --n 8192 --k 8192 --iters 5 >/dev/null 2>&1 || true
    for c in "8192 8192" "28672 8192"; do
        set -- $c
        for m in 2 4 8; do
            echo -n "old q4gsw M=$m N=$1 K=$2: "
            ETVK_Q4_FMA=0 exp_row .gl/bin/etvk bench linear_q4gsw --m $m --n "$1" --k "$2"
            for wgs in 264 528 1056; do
                echo -n "ur4 wgs=$wgs q4gsw M=$m N=$1 K=$2: "
                ETVK_Q4_WIDE_WGS=$wgs exp_row .gl/bin/etvk bench linear_q4gsw --m $m --n "$1" --k "$2"
                echo -n "ur8 wgs=$wgs q4gsw M=$m N=$1 K=$2: "
                ETVK_Q4_WIDE_WGS=$wgs ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_ur8 exp_row .gl/bin/etvk bench linear_q4gsw --m $m --n "$1" --k "$2"
            done
        done
    done
} 2>&1 | tee "$OUT/s32-second.txt"
timeout 200 bash .gl/run-s31-first.sh || true
