#!/usr/bin/env bash
# Session 25, run 5: run 4 found the M = 1 backward on small weights faster at one workgroup
# per SM (ETVK_Q4_BWD_WGS = 132, touch decode): 4096^2 11.4 -> 11.0 us, N = 8192 K = 2048
# 12.0 -> 11.3. Where does that stop paying? Default against 132, interleaved twice, from
# 2048^2 to 8192^2. No build: environment only.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s25-fifth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s25-fifth.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
{
    for s in "2048 2048" "4096 1024" "4096 4096" "8192 2048" "2048 8192" "4096 8192" "8192 4096" \
             "11008 4096" "4096 11008" "14336 4096" "4096 14336" "8192 8192"; do
        set -- $s
        for wgs in 0 132 0 132; do
            echo -n "backward N=$1 K=$2 wgs=$wgs: "
            if [ "$wgs" = 0 ]; then unset ETVK_Q4_BWD_WGS; else export ETVK_Q4_BWD_WGS=$wgs; fi
            exp_row .gl/bin/etvk bench linear_q4gsw_backward --m 1 --n "$1" --k "$2"
        done
        unset ETVK_Q4_BWD_WGS
    done
} 2>&1 | tee "$OUT/s25-fifth.txt"
