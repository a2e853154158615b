#!/usr/bin/env bash
# Session 44, third run: the register-operand int8 forward as built at this commit (TT row
# tiles per subgroup sharing each chunk's B: 4 at one fragment, 2 at two and four; B by
# coopMatLoadNV, the next step's limbs / side touched into L1), opt-in by ETVK_Q4_MMA_REG=1,
# against the tiles at M = 8 / 16 / 32 on the issue's three shapes; its registers; its
# self-check and GPU test; TT = 8 at one fragment by override; 8da4w at M = 8 / 16.
# Here:   rm -rf .gl/bin/* && scripts/device-bench.sh prepare && bash docs/experiments/run-s44c.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s44c.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    rm -f .gl/bin/*.gz
    strip .gl/bin/* || true
    gzip -9 -f .gl/bin/*
    exp_comp tt8 q4_linear_mma_reg_f1 q4_linear_mma_reg.comp -O -DMF=1 -DTT=8
}
exp_begin "$0" "$@"
row() { EXP_ITERS=20 exp_line .gl/bin/etvk "$@"; }
{
    exp_header
    echo "== registers"
    ETVK_PIPELINE_STATS=1 ETVK_Q4_MMA_REG=1 .gl/bin/etvk bench linear_q4gsw --m 32 --n 8192 --k 8192 --iters 2 \
        --ceiling-mib 64 2>&1 | grep -E "stats q4_linear_mma_reg|self-check|kernels" || true
    # Most telling rows first (the device time left may end the run).
    for sm in "8192 8192 8" "8192 8192 32" "28672 8192 8" "8192 8192 16" "28672 8192 32" "8192 28672 8" \
        "8192 28672 32" "28672 8192 16" "8192 28672 16"; do
        read -r n k m <<<"$sm"
        echo -n "tiles M=$m N=$n K=$k: "; row linear_q4gsw --m $m --n "$n" --k "$k"
        echo -n "reg   M=$m N=$n K=$k: "; ETVK_Q4_MMA_REG=1 row linear_q4gsw --m $m --n "$n" --k "$k"
    done
    for shape in "8192 8192" "28672 8192"; do
        read -r n k <<<"$shape"
        echo -n "reg tt8 M=8 N=$n K=$k: "
        ETVK_Q4_MMA_REG=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_tt8 row linear_q4gsw --m 8 --n "$n" --k "$k"
    done
    echo "== 8da4w"
    for m in 8 16; do
        echo -n "dq tiles M=$m 28672x8192: "; row linear_dq8ca_q4gsw --m $m --n 28672 --k 8192
        echo -n "dq reg   M=$m 28672x8192: "; ETVK_Q4_MMA_REG=1 row linear_dq8ca_q4gsw --m $m --n 28672 --k 8192
    done
    echo "== GPU tests (register form forced)"
    ETVK_Q4_MMA_REG=1 q4_tests int8
} 2>&1 | tee "$OUT/s44c.txt"
