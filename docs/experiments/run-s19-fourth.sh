#!/usr/bin/env bash
# Session 19, run 4 (and run 6: the same after the touch loop's fix, with wide_f16t forced too): the built fp16-decode wide backward (q4_linear_bwd_wide_f16_m1_* and,
# at launches of two workgroups per SM, _f16t_m1_* with 64 touch invocations) against the
# magic decode (ETVK_Q4_BWD=wide_magic) at M = 1 over the issue's shapes and K = 4096 / 14336
# ones; the forward M = 1 beside them for the ratio; the q4_linear tests natively.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s19-fourth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s19-fourth.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cp docs/experiments/run-s19-fourth.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
{
    .gl/bin/etvk devices 2>&1 | grep -E "denorm|float16"
    q4_tests
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for shape in "8192 8192" "28672 8192" "8192 28672" "4096 4096" "14336 4096" "4096 14336" "2048 8192"; do
        set -- $shape
        echo -n "fwd M=1 N=$1 K=$2: "; bench_row linear_q4gsw --m 1 --n $1 --k $2
        for f in auto wide_magic wide_f16 wide_f16t auto; do
            echo -n "$f bwd M=1 N=$1 K=$2: "
            if [ $f = auto ]; then bench_row linear_q4gsw_backward --m 1 --n $1 --k $2
            else ETVK_Q4_BWD=$f bench_row linear_q4gsw_backward --m 1 --n $1 --k $2; fi
        done
    done
} 2>&1 | tee "$OUT/s19-fourth.txt"
