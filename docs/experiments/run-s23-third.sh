#!/usr/bin/env bash
# Session 23, run 3: the M = 32 backward (f16 tensor cores, 32 x 128 tiles, split-K) fell
# below 0.8 of the forward at N = 28672, K = 8192 (run 2: 371.3 against 288.0 us: the
# forward gained 9% from the row-quad scales in session 22). Its slice count swept by
# ETVK_Q4_BWD_MMA_WGS (slices = round(target / tiles), cut to <= 2048 rows) on the two long
# shapes, and the forward at M = 32 again for the ratio.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s23-third.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s23-third.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cp docs/experiments/run-s23-third.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
{
    for shape in "28672 8192" "8192 28672" "8192 8192"; do
        set -- $shape
        echo -n "fwd M=32 N=$1 K=$2: "; bench_row linear_q4gsw --m 32 --n $1 --k $2
        for t in default 768 1024 1152 1344 1792; do
            echo -n "bwd M=32 N=$1 K=$2 target $t: "
            if [ $t = default ]; then bench_row linear_q4gsw_backward --m 32 --n $1 --k $2
            else ETVK_Q4_BWD_MMA_WGS=$t bench_row linear_q4gsw_backward --m 32 --n $1 --k $2; fi
        done
        echo -n "fwd M=32 N=$1 K=$2: "; bench_row linear_q4gsw --m 32 --n $1 --k $2
    done
} 2>&1 | tee "$OUT/s23-third.txt"
