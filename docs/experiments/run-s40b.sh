#!/usr/bin/env bash
# Session 40, second run: is the M = 1 half GEMV's arithmetic on its critical path? By
# override of q4_linear_gemv_half{,_early,_sliced} (switch DOT of the shader):
#   dot1: two limbs' int8 dot products instead of three (diagnostic: results off by ~1e-6);
#   dot2: the first packed word through three int8 limbs, the second through the fp32 in-place
#         decode and FMAs (exact, half the int8 dot products, work on the fp32 pipe);
#   dot3: every code through the fp32 decode and FMAs (exact, no limbs).
# Against the built kernels (53d25a7's binary), interleaved twice, with a 2-GiB read ceiling.
# The switch is kept as docs/experiments/q4_linear_gemv_half-s40-dot.diff (applied to a copy
# of shaders/ by prepare). Outcome (run 2, an H100): journal, session 40; not kept.
# Here:   bash docs/experiments/run-s40b.sh prepare   (53d25a7's etvk in /tmp/bin_old)
# There:  (device tool, carry [".gl"])  bash .gl/run-s40b.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_carry_binary /tmp/bin_old/etvk
    exp_patched docs/experiments/q4_linear_gemv_half-s40-dot.diff
    for d in 1 2 3; do
        exp_comp dot$d q4_linear_gemv_half q4_linear_gemv_half.comp -O -DDOT=$d
        exp_comp dot$d q4_linear_gemv_half_early q4_linear_gemv_half.comp -O -DDOT=$d -DEARLY=1
        exp_comp dot$d q4_linear_gemv_half_sliced q4_linear_gemv_half.comp -O -DDOT=$d -DSLICED=1
    done
}
exp_begin "$0" "$@"
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    .gl/bin/etvk bench read --ceiling-mib 2048 2>&1 | grep -iE "read|copy" | head -4
    for round in 1 2; do
        for shape in "8192 8192" "28672 8192" "8192 28672" "4096 4096" "14336 4096"; do
            read -r n k <<<"$shape"
            echo -n "r$round base N=$n K=$k: "; exp_q4_row --m 1 --n $n --k $k
            for d in 1 2 3; do
                echo -n "r$round dot$d N=$n K=$k: "
                ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_dot$d exp_q4_row --m 1 --n $n --k $k
            done
        done
        echo -n "r$round base qcs4w 8192^2: "
        exp_line .gl/bin/etvk linear_qcs4w --m 1 --n 8192 --k 8192
        for d in 2 3; do
            echo -n "r$round dot$d qcs4w 8192^2: "
            ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_dot$d exp_line .gl/bin/etvk linear_qcs4w --m 1 --n 8192 --k 8192
        done
    done
} 2>&1 | tee "$OUT/s40b.txt"
