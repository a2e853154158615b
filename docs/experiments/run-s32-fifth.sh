#!/usr/bin/env bash
# Session 32, run 5: run 4 cut to fit the session's last device minutes. Two words per lane at
# M = 2 and 4 (`ETVK_Q4_GEMV=fma_w2`) against one (`fma`) and the int8 GEMV; M = 8 without the
# int8 tensor cores (`ETVK_Q4_MMA=0`): the FMA GEMV (default there) against the persistent
# int8 GEMV (`ETVK_Q4_FMA=0`). One pass each; 8192^2 only unless EXP_MORE=1.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s32-fifth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s32-fifth.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
{
    .gl/bin/etvk bench read --ceiling-mib 1024 2>&1 | grep -E 'ceiling' || true
    for c in "8192 8192" ${EXP_MORE:+"4096 4096"}; do
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
    for c in "8192 8192" ${EXP_MORE:+"28672 8192"}; do
        set -- $c
        for v in int8 fma; do
            echo -n "mma-off $v q4gsw M=8 N=$1 K=$2: "
            if [ $v = int8 ]; then
                ETVK_Q4_MMA=0 ETVK_Q4_FMA=0 exp_row .gl/bin/etvk bench linear_q4gsw --m 8 --n "$1" --k "$2"
            else
                ETVK_Q4_MMA=0 exp_row .gl/bin/etvk bench linear_q4gsw --m 8 --n "$1" --k "$2"
            fi
        done
    done
} 2>&1 | tee "$OUT/s32-fifth.txt"
