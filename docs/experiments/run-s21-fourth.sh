#!/usr/bin/env bash
# Session 21, run 4 (commit 2d8beba): the fitted half GEMV as the default at M = 1 over the
# issue's and Llama-like shapes, and on rows of < 128 chunks (K < 4096) forced against
# their default lane-group GEMV; the q4_linear tests.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s21-fourth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s21-fourth.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cp docs/experiments/run-s21-fourth.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for shape in "8192 8192" "28672 8192" "8192 28672" "4096 4096" "1024 4096" "14336 4096" \
        "4096 14336" "4096 11008" "11008 4096" "8192 8448"; do
        set -- $shape
        echo -n "default fwd M=1 N=$1 K=$2: "; bench_row linear_q4gsw --m 1 --n $1 --k $2
    done
    for shape in "8192 8192" "28672 8192" "8192 28672" "4096 4096"; do
        set -- $shape
        echo -n "default qcs4w M=1 N=$1 K=$2: "; bench_row linear_qcs4w --m 1 --n $1 --k $2
    done
    for shape in "8192 2048" "2048 2048" "32768 2048" "4096 1024" "1024 512" "8192 3072"; do
        set -- $shape
        echo -n "default fwd M=1 N=$1 K=$2: "; bench_row linear_q4gsw --m 1 --n $1 --k $2
        echo -n "half fwd M=1 N=$1 K=$2: "; ETVK_Q4_GEMV=half bench_row linear_q4gsw --m 1 --n $1 --k $2
        echo -n "persist fwd M=1 N=$1 K=$2: "; ETVK_Q4_GEMV=wide_dp4_persist bench_row linear_q4gsw --m 1 --n $1 --k $2
    done
    echo "== q4_tests"; q4_tests
} 2>&1 | tee "$OUT/s21-fourth.txt"
