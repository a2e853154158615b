#!/usr/bin/env bash
# Session 21, run 5 (commit 3e20b7a): M = 1 forward / backward on the issue's shapes and
# Llama-like ones with the half GEMV everywhere at M = 1; tiny rows (K <= 256) against the
# lane groups; M = 2 on short rows (lane groups) against the persistent form.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s21-fifth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s21-fifth.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cp docs/experiments/run-s21-fifth.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
{
    .gl/bin/etvk bench read --ceiling-mib 2048 2>&1 | grep -E 'ceiling' || true
    for shape in "8192 8192" "28672 8192" "8192 28672" "4096 4096" "14336 4096" "4096 14336" \
        "2048 8192" "8192 2048"; do
        set -- $shape
        echo -n "fwd M=1 N=$1 K=$2: "; bench_row linear_q4gsw --m 1 --n $1 --k $2
        echo -n "bwd M=1 N=$1 K=$2: "; bench_row linear_q4gsw_backward --m 1 --n $1 --k $2
    done
    for shape in "8192 8192" "28672 8192" "8192 28672"; do
        set -- $shape
        echo -n "qcs4w M=1 N=$1 K=$2: "; bench_row linear_qcs4w --m 1 --n $1 --k $2
    done
    for shape in "4096 256" "4096 128" "4096 64" "32768 256"; do
        set -- $shape
        echo -n "default fwd M=1 N=$1 K=$2: "; bench_row linear_q4gsw --m 1 --n $1 --k $2
        echo -n "lanes fwd M=1 N=$1 K=$2: "; ETVK_Q4_GEMV=lanes bench_row linear_q4gsw --m 1 --n $1 --k $2
    done
    for shape in "8192 2048" "4096 1024"; do
        set -- $shape
        for m in 2 4; do
            echo -n "default fwd M=$m N=$1 K=$2: "; bench_row linear_q4gsw --m $m --n $1 --k $2
            echo -n "persist fwd M=$m N=$1 K=$2: "; ETVK_Q4_GEMV=wide_dp4_persist bench_row linear_q4gsw --m $m --n $1 --k $2
        done
    done
    echo "== q4_tests"; q4_tests
} 2>&1 | tee "$OUT/s21-fifth.txt"
