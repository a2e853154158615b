#!/usr/bin/env bash
# Session 36: the 8da4w linear on the f16 tensor-core forward (M >= 128, the codes form)
# reading the rows' integers q - zp from `q4_dq_rowscale` (its `_x16` forms: one MMA per
# fragment pair) against the fake-quantized x's hi / lo pairs (`ETVK_DQ_ROWS=0`, two MMAs),
# interleaved twice; then at M = 32 / 64 the default (int8 tensor cores, three limbs)
# against the f16 forward forced (`ETVK_Q4_GEMV=f16`, integer rows), for the threshold.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s36-dqrows.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s36-dqrows.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
{
    nvidia-smi --query-gpu=name --format=csv,noheader || true
    for shape in "4096 4096" "14336 4096" "8192 8192"; do
        set -- $shape
        for m in 128 512 2048; do
            for v in pairs rows pairs rows; do
                echo -n "$v M=$m N=$1 K=$2: "
                e=""
                [ $v = pairs ] && e="ETVK_DQ_ROWS=0"
                (
                    [ -n "$e" ] && export "${e?}"
                    exp_row .gl/bin/etvk bench linear_dq8ca_q4gsw --m $m --n "$1" --k "$2"
                )
            done
        done
        for m in 32 64; do
            for v in default f16 default f16; do
                echo -n "$v M=$m N=$1 K=$2: "
                e=""
                [ $v = f16 ] && e="ETVK_Q4_GEMV=f16"
                (
                    [ -n "$e" ] && export "${e?}"
                    exp_row .gl/bin/etvk bench linear_dq8ca_q4gsw --m $m --n "$1" --k "$2"
                )
            done
        done
    done
} 2>&1 | tee "$OUT/s36-dqrows.txt"
