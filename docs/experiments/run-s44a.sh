#!/usr/bin/env bash
# Session 44, first run: what the driver makes of the register-operand int8 forward.
# The driver's statistics (registers, binary size = 16 bytes per SASS instruction) and, where
# it offers them, its internal representations (ETVK_PIPELINE_IR, now asked for at pipeline
# creation) of the tiles (q4_linear_mma_f1), the register form (_reg_f1), the register form
# with B by coopMatLoadNV (s43's bload diff) and the M = 1 half GEMV; then session 43's
# prepared comparison (run-s43c.sh: tiles / reg / bload at M = 8 / 16 / 32) and the M = 1
# floor rows against a 2-GiB ceiling.
# Here:   rm -rf .gl/bin/* && scripts/device-bench.sh prepare && bash docs/experiments/run-s44a.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s44a.sh
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
    # A's elements as bytes of the masked words, B by coopMatLoadNV.
    exp_patched docs/experiments/q4_linear_mma_reg-s44-bytes.diff 0fc3c5a
    for mf in 1 2 4; do
        exp_comp s44bytes q4_linear_mma_reg_f$mf q4_linear_mma_reg.comp -O -DMF=$mf
    done
    # ... and the next step's limbs / side touched with its weights (into L1).
    exp_patched docs/experiments/q4_linear_mma_reg-s44-touch.diff 0fc3c5a
    for mf in 1 2 4; do
        exp_comp s44touch q4_linear_mma_reg_f$mf q4_linear_mma_reg.comp -O -DMF=$mf
    done
    # Attribution (time only, wrong results: self-checks off): A or B loop-invariant.
    for nm in constA constB; do
        exp_patched docs/experiments/q4_linear_mma_reg-s44-$nm.diff 0fc3c5a
        exp_comp d44$nm q4_linear_mma_reg_f1 q4_linear_mma_reg.comp -O -DMF=1
    done
    EXP_SHADERS=shaders
}
exp_begin "$0" "$@"
row() { EXP_ITERS=20 exp_line .gl/bin/etvk "$@"; }
stats() {
    local tag=$1
    shift
    ETVK_PIPELINE_STATS=1 ETVK_PIPELINE_IR="$OUT/ir-$tag" timeout 120 .gl/bin/etvk bench "$@" \
        --iters 2 --ceiling-mib 64 2>&1 | grep -E "pipeline (stats|IR) q4_|kernels" | sed "s/^/[$tag] /" || true
}
{
    exp_header
    echo "== driver statistics and internal representations"
    stats tiles linear_q4gsw --m 8 --n 8192 --k 8192
    ETVK_Q4_MMA_REG=1 stats reg linear_q4gsw --m 8 --n 8192 --k 8192
    ETVK_Q4_MMA_REG=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_bload stats bload linear_q4gsw --m 8 --n 8192 --k 8192
    stats gemv1 linear_q4gsw --m 1 --n 8192 --k 8192
    for d in .gl/ovr_s44*; do
        [ -d "$d" ] || continue
        ETVK_Q4_MMA_REG=1 ETVK_SPIRV_OVERRIDE_DIR=$d stats "$(basename "$d")" linear_q4gsw --m 8 --n 8192 --k 8192
    done
    ls -la "$OUT"/ir-* 2>/dev/null | head -20 || true
    echo "== tiles / reg / bload (s43c)"
    for m in 8 32; do
        echo -n "tiles M=$m: "; row linear_q4gsw --m $m --n 8192 --k 8192
        echo -n "reg   M=$m: "; ETVK_Q4_MMA_REG=1 row linear_q4gsw --m $m --n 8192 --k 8192
        echo -n "bload M=$m: "; ETVK_Q4_MMA_REG=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_bload row linear_q4gsw --m $m --n 8192 --k 8192
        for d in .gl/ovr_s44*; do
            [ -d "$d" ] || continue
            echo -n "$(basename "$d") M=$m: "; ETVK_Q4_MMA_REG=1 ETVK_SPIRV_OVERRIDE_DIR=$d row linear_q4gsw --m $m --n 8192 --k 8192
        done
    done
    echo "== attribution at M = 8 (self-checks off; MISMATCH expected)"
    for d in .gl/ovr_d44*; do
        echo -n "$(basename "$d") M=8: "; ETVK_SELF_CHECKS=0 ETVK_Q4_MMA_REG=1 ETVK_SPIRV_OVERRIDE_DIR=$d row linear_q4gsw --m 8 --n 8192 --k 8192
        ETVK_SELF_CHECKS=0 ETVK_Q4_MMA_REG=1 ETVK_SPIRV_OVERRIDE_DIR=$d stats "$(basename "$d")" linear_q4gsw --m 8 --n 8192 --k 8192
    done
    echo "== M = 1 against a 2-GiB ceiling"
    for r in 1 2; do
        for shape in "8192 8192" "28672 8192" "8192 28672"; do
            read -r n k <<<"$shape"
            echo -n "M=1 N=$n K=$k: "; exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
        done
    done
} 2>&1 | tee "$OUT/s44a.txt"
