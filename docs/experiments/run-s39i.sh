#!/usr/bin/env bash
# Session 39, on an H200: is the cooperative_matrix2 forward's raw MMA rate limited by its
# fp32 accumulators? Runs 3-4 (H100): one MMA per 64-column step, no decode, fp32
# accumulators, 137 TFLOP/s. Here the same with fp16 accumulators (F16ACC; wrong numbers by
# design: timing only), with 256-row M tiles, and the fp16-weight form with fp16
# accumulators, beside the default kernel and the fp32 forms (q4_linear_cm2.comp's switches,
# ETVK_SPIRV_OVERRIDE_DIR, ETVK_Q4_CM2_TILE).
# Here:   bash docs/experiments/run-s39i.sh prepare
# There:  (device tool, kind nvidia-h200, carry [".gl"])  bash .gl/run-s39i.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
# name  ETVK_Q4_MMA  tile (M x N)  defines
VARIANTS=(
    "one_k64 cm2 128x128 MODE=2,NODEC=1,NOEPI=1,ONEMMA=1,BK=64"
    "one_k64_f16acc cm2 128x128 MODE=2,NODEC=1,NOEPI=1,ONEMMA=1,BK=64,F16ACC=1"
    "one_k64_bn256_f16acc cm2 256x128 MODE=2,NODEC=1,NOEPI=1,ONEMMA=1,BK=64,BN=256,F16ACC=1"
    "f16_sh_k64_bn256 cm2_f16 256x128 MODE=1,SHSCALE=1,BK=64,BN=256"
    "f16_k64_bn256_f16acc cm2_f16 256x128 MODE=1,SHSCALE=1,BK=64,BN=256,F16ACC=1"
)
exp_prepare() {
    exp_carry_bins
    exp_cm2_build "${VARIANTS[@]}"
}
exp_begin "$0" "$@"
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    exp_cm2_table "${VARIANTS[@]}"
} 2>&1 | tee "$OUT/s39i.txt"
