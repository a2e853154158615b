#!/usr/bin/env bash
# Session 14, run 4: the M = 1 backward with column blocks of one chunk (`q4_linear_bwd_wide_m1_c1`,
# ETVK_Q4_BWD=wide_c1): 256 row groups per workgroup summed in two levels in shared memory,
# one workgroup per chunk, so at K = 8192 one slice and no cross-workgroup sum (the
# partials, counter and final pass cost ~2.1 us of 20.8 at 8192^2 in session 6), against
# the built choice (c8 / c16), three rounds; the c1 form also at 2-3 slices
# (ETVK_Q4_BWD_WGS), and the forward M = 1 for the ratio.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s14-fourth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s14-fourth.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cp docs/experiments/run-s14-fourth.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
{
    for i in 1 2 3; do
        for s in "8192 8192" "28672 8192" "8192 28672"; do
            set -- $s
            echo -n "fwd #$i N=$1 K=$2: "; bench_row linear_q4gsw --m 1 --n $1 --k $2
            echo -n "bwd #$i N=$1 K=$2: "; bench_row linear_q4gsw_backward --m 1 --n $1 --k $2
            echo -n "bwd c1 #$i N=$1 K=$2: "; ETVK_Q4_BWD=wide_c1 bench_row linear_q4gsw_backward --m 1 --n $1 --k $2
        done
    done
    for w in 396 512 768; do
        for s in "8192 8192" "28672 8192"; do
            set -- $s
            echo -n "bwd c1 wgs=$w N=$1 K=$2: "
            ETVK_Q4_BWD_WGS=$w ETVK_Q4_BWD=wide_c1 bench_row linear_q4gsw_backward --m 1 --n $1 --k $2
        done
    done
} 2>&1 | tee "$OUT/s14-fourth.txt"
