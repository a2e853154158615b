#!/usr/bin/env bash
# Session 23, run 2: issue 3's table at the session's kernel commit (69f4f71): the q4_linear
# tests natively, then linear_q4gsw, its backward and linear_qcs4w over M = 1, 8, 32, 512,
# 2048 on the three shapes, the portable path (tensor cores off) at M = 512, and M = 1 on
# Llama-like shapes for the backward / forward ratios.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s23-table.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s23-table.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cp docs/experiments/run-s23-table.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
row() {
    .gl/bin/etvk bench "$@" --iters 20 --ceiling-mib 1024 2>&1 |
        grep -E '^\| linear|kernels|MISMATCH|rror' | sed 's/.*kernels/kernels/' | tr '\n' ' ' || true
    echo
}
{
    echo "== q4_linear tests"; q4_tests
    .gl/bin/etvk bench read --ceiling-mib 2048 2>&1 | grep -E 'ceiling|copy' || true
    for shape in "8192 8192" "28672 8192" "8192 28672"; do
        set -- $shape
        for m in 1 8 32 512 2048; do
            for op in linear_q4gsw linear_q4gsw_backward linear_qcs4w; do row $op --m $m --n $1 --k $2; done
        done
    done
    for shape in "8192 8192" "28672 8192" "8192 28672"; do
        set -- $shape
        for op in linear_q4gsw linear_q4gsw_backward; do
            echo -n "portable: "; ETVK_Q4_MMA=0 row $op --m 512 --n $1 --k $2
        done
    done
    for shape in "4096 4096" "14336 4096" "4096 14336" "2048 8192" "8192 2048" "8192 8192"; do
        set -- $shape
        for op in linear_q4gsw linear_q4gsw_backward; do row $op --m 1 --n $1 --k $2; done
    done
} 2>&1 | tee "$OUT/s23-table.txt"
