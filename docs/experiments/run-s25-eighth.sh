#!/usr/bin/env bash
# Session 25, run 9: the int8 tensor-core forward's split-K target again (session 9 chose
# 264 resident workgroups with a kernel of 114-120 registers and a slower limb node; since
# then row quads, opt=0 for f1 and the limb lanes). ETVK_Q4_MMA_WGS = 132 .. 528 against the
# default at M = 8 / 16 / 32 on the issue's shapes. No build: environment only.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s25-eighth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s25-eighth.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
{
    for c in "8 8192 8192" "8 28672 8192" "8 8192 28672" "16 8192 8192" "32 8192 8192" \
             "32 28672 8192" "32 8192 28672"; do
        set -- $c
        for wgs in 0 132 198 396 528; do
            echo -n "M=$1 N=$2 K=$3 wgs=$wgs: "
            if [ "$wgs" = 0 ]; then unset ETVK_Q4_MMA_WGS; else export ETVK_Q4_MMA_WGS=$wgs; fi
            exp_row .gl/bin/etvk bench linear_q4gsw --m "$1" --n "$2" --k "$3"
        done
        unset ETVK_Q4_MMA_WGS
    done
} 2>&1 | tee "$OUT/s25-eighth.txt"
