#!/usr/bin/env bash
# Session 20, run 5 (run 4 again after the final sum loads four slices at once and thin slices went back to the wide form): the sliced half GEMV (q4_linear_gemv_half_sliced_n512, rows of more
# than 256 chunks at M = 1; `half`: forced even where its slices are thin) against the kernels it replaces (ETVK_Q4_GEMV=wide_dp4_pre /
# wide_dp4: the 256-invocation wide form with / without the limbs pre-pass), the unsliced
# shapes as a check that nothing else moved, and the q4_linear tests natively.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s20-fifth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s20-fifth.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cp docs/experiments/run-s20-fifth.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    ETVK_PIPELINE_STATS=1 .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 28672 --iters 1 \
        --ceiling-mib 64 2>&1 | grep -E "stats.*half" | head -1 |
        sed -E "s/^.*stats (\S+) .*Register Count=([0-9]+).*/\1 regs \2/" || true
    for shape in "8192 28672" "4096 14336" "8192 12288" "8192 16384" "8192 8448" "2048 28672" "8192 28672"; do
        set -- $shape
        for v in built half wide_dp4_pre wide_dp4; do
            echo -n "$v fwd M=1 N=$1 K=$2: "
            if [ "$v" = built ]; then bench_row linear_q4gsw --m 1 --n $1 --k $2
            else ETVK_Q4_GEMV=$v bench_row linear_q4gsw --m 1 --n $1 --k $2; fi
        done
    done
    for v in built half wide_dp4_pre; do
        echo -n "$v qcs4w M=1 8192x28672: "
        if [ "$v" = built ]; then bench_row linear_qcs4w --m 1 --n 8192 --k 28672
        else ETVK_Q4_GEMV=$v bench_row linear_qcs4w --m 1 --n 8192 --k 28672; fi
    done
    for shape in "8192 8192" "28672 8192"; do
        set -- $shape
        echo -n "built fwd M=1 N=$1 K=$2: "; bench_row linear_q4gsw --m 1 --n $1 --k $2
    done
    echo "q4_linear tests:"; q4_tests
} 2>&1 | tee "$OUT/s20-fifth.txt"
