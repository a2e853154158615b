#!/usr/bin/env bash
# Session 43, first run: the int8 tensor-core forward with its MMA operands built in
# registers (q4_linear_mma_reg_*, ETVK_Q4_MMA_REG=1; it was the default when this ran) against
# the shared-memory tiles at M = 8, 16 and 32 on the issue's shapes, interleaved
# twice; at M = 2 / 4 the register form forced (ETVK_Q4_MMA_M=2) against the built GEMVs;
# the split target (ETVK_Q4_MMA_WGS) at M = 8; M = 1 for the ratio; the q4_linear tests
# that run the native tensor-core kernels.
# Outcome (run 1, an H100, 7d0d23b): the register form failed its self-check (the fragments'
# element order was assumed); the tile and GEMV rows are the journal's baseline (session 43).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s43a.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s43a.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_carry_tests
    # The register form compiled without glslc's -O (as q4_linear_mma_f1 is).
    exp_comp o0 q4_linear_mma_reg_f1 q4_linear_mma_reg.comp -DMF=1
    exp_comp o0 q4_linear_mma_reg_f2 q4_linear_mma_reg.comp -DMF=2
    exp_comp o0 q4_linear_mma_reg_f4 q4_linear_mma_reg.comp -DMF=4
}
exp_begin "$0" "$@"
row() { EXP_ITERS=20 exp_line .gl/bin/etvk "$@"; }
{
    exp_header
    echo "== the layout probe's element maps"
    RUST_LOG=info .gl/bin/etvk bench linear_q4gsw --m 8 --n 256 --k 256 --iters 2 --ceiling-mib 64 2>&1 |
        grep -iE "element maps|fragments|probe|self-check" || true
    echo "== self-check / tests"
    q4_tests tensor_core
    for round in 1 2; do
        for shape in "8192 8192" "28672 8192" "8192 28672" "4096 14336"; do
            read -r n k <<<"$shape"
            for m in 8 16 32; do
                echo -n "r$round tiles M=$m N=$n K=$k: "
                row linear_q4gsw --m $m --n "$n" --k "$k"
                echo -n "r$round reg   M=$m N=$n K=$k: "
                ETVK_Q4_MMA_REG=1 row linear_q4gsw --m $m --n "$n" --k "$k"
            done
            for m in 2 4; do
                echo -n "r$round gemv  M=$m N=$n K=$k: "
                row linear_q4gsw --m $m --n "$n" --k "$k"
                echo -n "r$round reg   M=$m N=$n K=$k: "
                ETVK_Q4_MMA_REG=1 ETVK_Q4_MMA_M=2 row linear_q4gsw --m $m --n "$n" --k "$k"
            done
        done
    done
    for shape in "8192 8192" "28672 8192"; do
        read -r n k <<<"$shape"
        for m in 8 16 32; do
            echo -n "reg -O0 M=$m N=$n K=$k: "
            ETVK_Q4_MMA_REG=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_o0 row linear_q4gsw --m $m --n "$n" --k "$k"
        done
    done
    for wgs in 132 396 528; do
        echo -n "reg wgs=$wgs M=8 N=8192 K=8192: "
        ETVK_Q4_MMA_REG=1 ETVK_Q4_MMA_WGS=$wgs row linear_q4gsw --m 8 --n 8192 --k 8192
    done
    for shape in "8192 8192" "28672 8192"; do
        read -r n k <<<"$shape"
        echo -n "M=1 N=$n K=$k: "
        row linear_q4gsw --m 1 --n "$n" --k "$k"
        echo -n "tiles dq8ca M=16 N=$n K=$k: "
        row linear_dq8ca_q4gsw --m 16 --n "$n" --k "$k"
        echo -n "reg dq8ca M=16 N=$n K=$k: "
        ETVK_Q4_MMA_REG=1 row linear_dq8ca_q4gsw --m 16 --n "$n" --k "$k"
        echo -n "persist dq8ca M=8 N=$n K=$k: "
        row linear_dq8ca_q4gsw --m 8 --n "$n" --k "$k"
        echo -n "reg dq8ca M=8 N=$n K=$k: "
        ETVK_Q4_MMA_REG=1 ETVK_DQ_PERSIST=0 row linear_dq8ca_q4gsw --m 8 --n "$n" --k "$k"
        echo -n "reg qcs4w M=8 N=$n K=$k: "
        ETVK_Q4_MMA_REG=1 row linear_qcs4w --m 8 --n "$n" --k "$k"
        echo -n "tiles qcs4w M=8 N=$n K=$k: "
        row linear_qcs4w --m 8 --n "$n" --k "$k"
    done
} 2>&1 | tee "$OUT/s43a.txt"
