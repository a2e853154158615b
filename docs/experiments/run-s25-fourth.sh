#!/usr/bin/env bash
# Session 25, run 4: the M = 1 backward on the small shapes outside the issue's table
# (4096^2, N = 2048 K = 8192, N = 8192 K = 2048; backward / forward 0.72-0.77) under other
# launch targets (ETVK_Q4_BWD_WGS) and decodes (ETVK_Q4_BWD = wide_magic / wide_f16 /
# wide_c16), the forward once per shape for the ratio. No build: environment only.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s25-fourth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s25-fourth.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
{
    for s in "4096 4096" "2048 8192" "8192 2048"; do
        set -- $s
        echo -n "forward N=$1 K=$2: "
        exp_row .gl/bin/etvk bench linear_q4gsw --m 1 --n "$1" --k "$2"
        for wgs in 0 132 198 264 396 528; do
            for dec in default wide_magic wide_f16 wide_c16; do
                echo -n "backward N=$1 K=$2 wgs=$wgs dec=$dec: "
                if [ "$dec" = default ]; then unset ETVK_Q4_BWD; else export ETVK_Q4_BWD=$dec; fi
                if [ "$wgs" = 0 ]; then unset ETVK_Q4_BWD_WGS; else export ETVK_Q4_BWD_WGS=$wgs; fi
                exp_row .gl/bin/etvk bench linear_q4gsw_backward --m 1 --n "$1" --k "$2"
            done
        done
        unset ETVK_Q4_BWD ETVK_Q4_BWD_WGS
    done
} 2>&1 | tee "$OUT/s25-fourth.txt"
