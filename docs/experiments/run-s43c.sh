#!/usr/bin/env bash
# Session 43, third run: the register-operand int8 forward with B loaded by coopMatLoadNV
# straight from the limbs buffer (q4_linear_mma_reg-s43-bload.diff, an override) against the
# built register form (element-wise B) and the tiles, M = 8 / 16 / 32 at 8192^2 and M = 8 at
# 28672 x 8192.
# Here:   bash docs/experiments/run-s43c.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s43c.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    cargo build --release -p etvk-cli -p etvk-ffi
    exp_carry_bins
    exp_patched docs/experiments/q4_linear_mma_reg-s43-bload.diff 0fc3c5a
    for mf in 1 2 4; do
        exp_comp bload q4_linear_mma_reg_f$mf q4_linear_mma_reg.comp -O -DMF=$mf
    done
}
exp_begin "$0" "$@"
row() { EXP_ITERS=20 exp_line .gl/bin/etvk "$@"; }
{
    exp_header
    for shape in "8192 8192 8 16 32" "28672 8192 8"; do
        read -r n k ms <<<"$shape"
        for m in $ms; do
            echo -n "tiles M=$m N=$n K=$k: "
            row linear_q4gsw --m $m --n "$n" --k "$k"
            echo -n "reg   M=$m N=$n K=$k: "
            ETVK_Q4_MMA_REG=1 row linear_q4gsw --m $m --n "$n" --k "$k"
            echo -n "bload M=$m N=$n K=$k: "
            ETVK_Q4_MMA_REG=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_bload row linear_q4gsw --m $m --n "$n" --k "$k"
        done
    done
} 2>&1 | tee "$OUT/s43c.txt"
