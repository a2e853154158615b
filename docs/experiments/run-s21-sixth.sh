#!/usr/bin/env bash
# Session 21, run 6: the M = 1 backward on rows of < 128 chunks (K < 4096; default: split-N
# + reduce) against the wide backward forced (ETVK_Q4_BWD=wide: column width and decode
# chosen as for longer rows); M = 2..4 forward on short rows with the persistent form.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s21-sixth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s21-sixth.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cp docs/experiments/run-s21-sixth.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for shape in "8192 2048" "2048 2048" "32768 2048" "8192 3072" "4096 1024" "2048 512" "4096 4096"; do
        set -- $shape
        echo -n "default bwd M=1 N=$1 K=$2: "; bench_row linear_q4gsw_backward --m 1 --n $1 --k $2
        for f in wide wide_magic wide_c8 wide_c16; do
            echo -n "$f bwd M=1 N=$1 K=$2: "; ETVK_Q4_BWD=$f bench_row linear_q4gsw_backward --m 1 --n $1 --k $2
        done
    done
    for shape in "8192 2048" "4096 1024" "14336 4096"; do
        set -- $shape
        for m in 2 3 4; do
            echo -n "default fwd M=$m N=$1 K=$2: "; bench_row linear_q4gsw --m $m --n $1 --k $2
        done
    done
    echo "== q4_tests"; q4_tests
} 2>&1 | tee "$OUT/s21-sixth.txt"
