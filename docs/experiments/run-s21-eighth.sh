#!/usr/bin/env bash
# Session 21, run 8: the persistent int8 GEMV (M = 2..8) with one invocation per chunk in
# whole subgroups against its old fixed 128 / 256 (ETVK_Q4_PERSIST_LOCAL widens to it).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s21-eighth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s21-eighth.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cp docs/experiments/run-s21-eighth.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for shape in "8192 2048 128" "4096 1024 128" "8192 3072 128" "8192 5120 256" "8192 6144 256" "14336 4096 128"; do
        set -- $shape
        for m in 2 4; do
            echo -n "fit fwd M=$m N=$1 K=$2: "; bench_row linear_q4gsw --m $m --n $1 --k $2
            echo -n "old fwd M=$m N=$1 K=$2: "; ETVK_Q4_PERSIST_LOCAL=$3 bench_row linear_q4gsw --m $m --n $1 --k $2
        done
    done
    echo "== q4_tests"; q4_tests
} 2>&1 | tee "$OUT/s21-eighth.txt"
