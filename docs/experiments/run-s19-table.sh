#!/usr/bin/env bash
# Session 19, run 8: the issue-3 table for linear_q4gsw and its backward at the session's
# last kernel commit (the full `scripts/device-bench.sh` minus qcs4w, adamw and lora, which
# did not change since session 16), within the session's remaining device time.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s19-table.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s19-table.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cp docs/experiments/run-s19-table.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
{
    .gl/bin/etvk bench read --ceiling-mib 2048 2>&1 | grep -E 'ceiling|copy' || true
    for shape in "8192 8192" "28672 8192" "8192 28672"; do
        set -- $shape
        for m in 1 8 32 512 2048; do
            for op in linear_q4gsw linear_q4gsw_backward; do
                .gl/bin/etvk bench $op --m $m --n $1 --k $2 --iters 20 --ceiling-mib 1024 2>&1 |
                    grep -E '^\| linear|kernels' | sed 's/.*kernels/kernels/' | tr '\n' ' ' || true
                echo
            done
        done
    done
} 2>&1 | tee "$OUT/s19-table.txt"
