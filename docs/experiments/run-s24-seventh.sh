#!/usr/bin/env bash
# Session 24, run 9: the built binary after the session's kernel commits (the wide backward's
# one row body, opt=0 for q4_linear_mma_f1 and q4_linear_bwd_staged_m8): the q4_linear tests
# natively, then M = 1 / 8 / 32 forward and backward on the issue's three shapes.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s24-seventh.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s24-seventh.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cp docs/experiments/run-s24-seventh.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
row() { .gl/bin/etvk bench "$@" --iters 20 --ceiling-mib 1024 2>&1 |
        grep -E '^\| linear|kernels|MISMATCH|rror' | sed 's/.*kernels/kernels/' | tr '\n' ' ' || true; echo; }
{
    echo "== q4_linear tests"; q4_tests
    for shape in "8192 8192" "28672 8192" "8192 28672"; do
        set -- $shape
        for m in 1 8 32; do
            for op in linear_q4gsw linear_q4gsw_backward; do row $op --m $m --n $1 --k $2; done
        done
    done
} 2>&1 | tee "$OUT/s24-seventh.txt"
