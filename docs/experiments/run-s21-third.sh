#!/usr/bin/env bash
# Session 21, run 3: the half GEMV with one invocation per half chunk of its slice (local
# size 2 x chunks per slice rounded up to 32) against the fixed 512 of 1a5235f
# (ETVK_Q4_HALF_LOCAL=512 restores it), and forced on rows of <= 128 chunks (K = 4096)
# against their default persistent 128-invocation form. Built binary, no overrides.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s21-third.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s21-third.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cp docs/experiments/run-s21-third.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for shape in "8192 28672" "4096 14336" "2048 28672" "8192 12288" "8192 16384" "8192 8192" \
        "28672 8192" "8192 5120" "8192 28672"; do
        set -- $shape
        echo -n "fit fwd M=1 N=$1 K=$2: "; bench_row linear_q4gsw --m 1 --n $1 --k $2
        echo -n "512 fwd M=1 N=$1 K=$2: "; ETVK_Q4_HALF_LOCAL=512 bench_row linear_q4gsw --m 1 --n $1 --k $2
    done
    for shape in "8192 8448" "4096 4096" "14336 4096" "1024 4096" "4096 4096"; do
        set -- $shape
        echo -n "default fwd M=1 N=$1 K=$2: "; bench_row linear_q4gsw --m 1 --n $1 --k $2
        echo -n "half fwd M=1 N=$1 K=$2: "; ETVK_Q4_GEMV=half bench_row linear_q4gsw --m 1 --n $1 --k $2
        echo -n "half512 fwd M=1 N=$1 K=$2: "; ETVK_Q4_HALF_LOCAL=512 ETVK_Q4_GEMV=half bench_row linear_q4gsw --m 1 --n $1 --k $2
    done
    for w in 132 264; do
        echo -n "half wgs=$w fwd M=1 N=4096 K=4096: "; ETVK_Q4_WIDE_WGS=$w ETVK_Q4_GEMV=half bench_row linear_q4gsw --m 1 --n 4096 --k 4096
    done
    echo -n "fit qcs4w M=1 N=8192 K=28672: "; bench_row linear_qcs4w --m 1 --n 8192 --k 28672
    echo -n "512 qcs4w M=1 N=8192 K=28672: "; ETVK_Q4_HALF_LOCAL=512 bench_row linear_qcs4w --m 1 --n 8192 --k 28672
    echo -n "default qcs4w M=1 N=4096 K=4096: "; bench_row linear_qcs4w --m 1 --n 4096 --k 4096
    echo -n "half qcs4w M=1 N=4096 K=4096: "; ETVK_Q4_GEMV=half bench_row linear_qcs4w --m 1 --n 4096 --k 4096
    echo "== q4_tests"; q4_tests
} 2>&1 | tee "$OUT/s21-third.txt"
