#!/usr/bin/env bash
# Session 36: the 8da4w linear on the int8 tensor cores (M = 8..127) with its integers
# q - zp in two limbs (`q4_mma_limbs_dq_*`, `q4_linear_mma_dq_*`) against three limbs of
# the fake-quantized x (`ETVK_DQ_MMA=0`), interleaved twice; the f16 forward on the integer
# rows (`ETVK_Q4_GEMV=f16`) against the default at M = 32 / 64 (the threshold); the tiny
# 8da4w Llamas' decode GPU time with the norms' row ranges (default), none
# (`ETVK_ROW_RANGE=off`) and the SiLU's too (`all`).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s36-mma.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s36-mma.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
# One bench line with ENV (NAME=VALUE or empty) set. Usage: row_with ENV M N K
row_with() {
    (
        [ -n "$1" ] && export "${1?}"
        exp_row .gl/bin/etvk bench linear_dq8ca_q4gsw --m "$2" --n "$3" --k "$4"
    )
}
{
    nvidia-smi --query-gpu=name --format=csv,noheader || true
    echo "== two limbs (default) against three (ETVK_DQ_MMA=0)"
    for shape in "8192 8192" "28672 8192" "14336 4096" "4096 4096"; do
        set -- $shape
        for m in 8 16 32 64; do
            [ "$m" = 8 ] && [ "$2" = 4096 ] && continue # the FMA GEMV's
            for v in three two three two; do
                echo -n "$v M=$m N=$1 K=$2: "
                e=""
                [ $v = three ] && e="ETVK_DQ_MMA=0"
                row_with "$e" "$m" "$1" "$2"
            done
        done
    done
    echo "== the f16 forward on the integer rows (ETVK_Q4_GEMV=f16) against the default"
    for shape in "8192 8192" "14336 4096" "4096 4096"; do
        set -- $shape
        for m in 32 64 96; do
            for v in default f16; do
                echo -n "$v M=$m N=$1 K=$2: "
                e=""
                [ $v = f16 ] && e="ETVK_Q4_GEMV=f16"
                row_with "$e" "$m" "$1" "$2"
            done
        done
    done
    echo "== tiny Llamas, decode GPU time per execute: row ranges norm (default) / off / all"
    for round in 1 2; do
        for f in e6_llama3_tiny_kvcache_8da4w e7_llama3_tiny_kvcache_8da4w_fp16_emb4; do
            for v in norm off all; do
                echo -n "$v $f: "
                ETVK_ROW_RANGE=$v ETVK_PROFILE_WHOLE=1 .gl/bin/etvk generate tests/fixtures/$f/model.pte \
                    --prompt-tokens 1,2,3,4 --max-new 40 --profile 2>&1 | grep -E 'whole' | tr '\n' ' '
                echo
            done
        done
    done
} 2>&1 | tee "$OUT/s36-mma.txt"
