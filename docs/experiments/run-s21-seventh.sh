#!/usr/bin/env bash
# Session 21, run 7 (commit 19829b8): the backward at M = 2..8 on rows of 16..127 chunks
# (now the wide M = 2 and staged kernels) against the split-N kernel they replace; the
# M = 1 pair on short rows as built; the q4_linear tests.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s21-seventh.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s21-seventh.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cp docs/experiments/run-s21-seventh.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for shape in "8192 2048" "4096 1024" "2048 512"; do
        set -- $shape
        for m in 1 2 4 8; do
            echo -n "default fwd M=$m N=$1 K=$2: "; bench_row linear_q4gsw --m $m --n $1 --k $2
            echo -n "default bwd M=$m N=$1 K=$2: "; bench_row linear_q4gsw_backward --m $m --n $1 --k $2
            [ $m -gt 1 ] && { echo -n "split bwd M=$m N=$1 K=$2: "; ETVK_Q4_BWD=split bench_row linear_q4gsw_backward --m $m --n $1 --k $2; }
        done
    done
    echo "== q4_tests"; q4_tests
} 2>&1 | tee "$OUT/s21-seventh.txt"
