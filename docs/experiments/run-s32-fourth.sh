#!/usr/bin/env bash
# Session 32, run 4: the FMA GEMV's other defaults. Without the int8 tensor cores
# (`ETVK_Q4_MMA=0`) it serves M = 8 on rows of any length: against the persistent int8 GEMV
# that served them (`ETVK_Q4_FMA=0`); M = 7 forced (`ETVK_Q4_GEMV=fma`) against the int8
# GEMV; M = 8 on short rows with the tensor cores on (the default choice) beside the int8
# tensor-core forward. Interleaved twice. Then two words per lane at M = 2 and 4
# (`ETVK_Q4_GEMV=fma_w2`, commit after cbc9055) against one (`fma`) and the int8 GEMV.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s32-fourth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s32-fourth.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
{
    .gl/bin/etvk bench read --ceiling-mib 1024 2>&1 | grep -E 'ceiling' || true
    .gl/bin/etvk bench linear_q4gsw --m 8 --n 8192 --k 8192 --iters 5 >/dev/null 2>&1 || true
    for c in "8192 8192" "28672 8192" "8192 28672" "4096 4096"; do
        set -- $c
        for v in int8 fma int8 fma; do
            echo -n "mma-off $v q4gsw M=8 N=$1 K=$2: "
            if [ $v = int8 ]; then
                ETVK_Q4_MMA=0 ETVK_Q4_FMA=0 exp_row .gl/bin/etvk bench linear_q4gsw --m 8 --n "$1" --k "$2"
            else
                ETVK_Q4_MMA=0 exp_row .gl/bin/etvk bench linear_q4gsw --m 8 --n "$1" --k "$2"
            fi
        done
    done
    for c in "8192 8192" "4096 4096" "2048 2048"; do
        set -- $c
        for v in int8 fma int8 fma; do
            echo -n "$v q4gsw M=7 N=$1 K=$2: "
            if [ $v = int8 ]; then
                exp_row .gl/bin/etvk bench linear_q4gsw --m 7 --n "$1" --k "$2"
            else
                ETVK_Q4_GEMV=fma exp_row .gl/bin/etvk bench linear_q4gsw --m 7 --n "$1" --k "$2"
            fi
        done
    done
    for c in "4096 4096" "14336 4096" "2048 2048" "3072 3072"; do
        set -- $c
        for v in old new old new; do
            echo -n "$v q4gsw M=8 N=$1 K=$2: "
            if [ $v = old ]; then
                ETVK_Q4_FMA=0 exp_row .gl/bin/etvk bench linear_q4gsw --m 8 --n "$1" --k "$2"
            else
                exp_row .gl/bin/etvk bench linear_q4gsw --m 8 --n "$1" --k "$2"
            fi
        done
    done
    for c in "8192 8192" "28672 8192" "4096 4096" "14336 4096"; do
        set -- $c
        for m in 2 4; do
            for v in int8 fma fma_w2; do
                echo -n "$v q4gsw M=$m N=$1 K=$2: "
                if [ $v = int8 ]; then
                    exp_row .gl/bin/etvk bench linear_q4gsw --m $m --n "$1" --k "$2"
                else
                    ETVK_Q4_GEMV=$v exp_row .gl/bin/etvk bench linear_q4gsw --m $m --n "$1" --k "$2"
                fi
            done
        done
    done
    echo "== registers (w2)"
    for m in 2 4; do
        ETVK_Q4_GEMV=fma_w2 ETVK_PIPELINE_STATS=1 .gl/bin/etvk bench linear_q4gsw --m $m --n 8192 \
            --k 8192 --iters 2 --ceiling-mib 64 2>&1 | grep -i "gemv_fma" | head -2 || true
    done
    for op in linear_qcs4w linear_dq8ca_q4gsw linear_q4gsw_backward; do
        echo -n "$op M=8 N=4096 K=4096: "
        exp_row .gl/bin/etvk bench $op --m 8 --n 4096 --k 4096
    done
} 2>&1 | tee "$OUT/s32-fourth.txt"
