#!/usr/bin/env bash
# Prepared in session 20, not run: whether the sliced half GEMV loses to uneven block sets.
# Its launch splits the 264-workgroup wave over the S slices (P = 264 / S sets), so at
# N = 8192 (1024 blocks of 8 rows) 16384-K rows make 132 sets of 7 or 8 blocks and 28672-K
# rows 66 sets of 15 or 16; ETVK_Q4_WIDE_WGS = 256 gives P = 128 / 64 sets of exactly 8 / 16
# (the unsliced 8192^2 kernel was the same at 256 and 264 in session 5).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s20-next.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s20-next.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cp docs/experiments/run-s20-next.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for shape in "8192 28672" "8192 16384" "4096 14336" "8192 28672"; do
        set -- $shape
        for w in 264 256 240 528; do
            echo -n "wgs=$w fwd M=1 N=$1 K=$2: "
            ETVK_Q4_WIDE_WGS=$w bench_row linear_q4gsw --m 1 --n $1 --k $2
        done
    done
} 2>&1 | tee "$OUT/s20-next.txt"
