#!/usr/bin/env bash
# Session 47, third run (short): the built half GEMV launch (balanced launch size, tickets
# where workgroups walk >= 8 blocks) against the old one (ETVK_Q4_HALF_BALANCED=0
# ETVK_Q4_HALF_TICKETS=0), M = 1, interleaved twice; qcs4w once.
# Here:   rm -rf .gl/bin/* .gl/ovr_* && bash scripts/device-bench.sh prepare && bash docs/experiments/run-s47c.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s47c.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() { exp_pack_bins; }
exp_begin "$0" "$@"
{
    exp_header
    for round in 1 2; do
        echo "== round $round"
        for nk in "8192 8192" "28672 8192"; do
            read -r n k <<<"$nk"
            echo -n "built N=$n K=$k: "; exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
            echo -n "old   N=$n K=$k: "; ETVK_Q4_HALF_BALANCED=0 ETVK_Q4_HALF_TICKETS=0 exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
        done
        echo -n "tickets, whole wave N=28672: "; ETVK_Q4_HALF_BALANCED=0 exp_row2g linear_q4gsw --m 1 --n 28672 --k 8192
    done
    echo -n "built qcs4w 8192^2: "; exp_row2g linear_qcs4w --m 1 --n 8192 --k 8192
    echo -n "old   qcs4w 8192^2: "; ETVK_Q4_HALF_BALANCED=0 exp_row2g linear_qcs4w --m 1 --n 8192 --k 8192
} 2>&1 | tee "$OUT/s47c.txt"
