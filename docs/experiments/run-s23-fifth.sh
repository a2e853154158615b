#!/usr/bin/env bash
# Session 23, run 5: the 128 x 128 tensor-core backward built with DBUF = 1, BR = 16 (run 4:
# M = 512 at 8192^2 1058 -> 1011 us by override): the q4_linear tests natively (the
# tensor-core self-check runs the t128 variants too), then old (.gl/bin/etvk-old, 69f4f71) /
# new at M = 128, 256, 512, 2048 on the three shapes.
# Here:   scripts/device-bench.sh prepare && cp OLD_ETVK .gl/bin/etvk-old &&
#         bash docs/experiments/run-s23-fifth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s23-fifth.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cp docs/experiments/run-s23-fifth.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
row() { local bin=$1; shift
    $bin bench "$@" --iters 20 --ceiling-mib 1024 2>&1 |
        grep -E '^\| linear|kernels|MISMATCH|rror' | sed 's/.*kernels/kernels/' | tr '\n' ' ' || true; echo; }
{
    echo "== q4_linear tests"; q4_tests
    for shape in "8192 8192" "28672 8192" "8192 28672"; do
        set -- $shape
        for m in 512 128 256 2048; do
            for v in old new; do
                echo -n "$v bwd M=$m N=$1 K=$2: "
                if [ $v = old ]; then row .gl/bin/etvk-old linear_q4gsw_backward --m $m --n $1 --k $2
                else row .gl/bin/etvk linear_q4gsw_backward --m $m --n $1 --k $2; fi
            done
        done
    done
} 2>&1 | tee "$OUT/s23-fifth.txt"
