#!/usr/bin/env bash
# Session 39, third run: the fp16-weight form of the VK_NV_cooperative_matrix2 forward
# (`q4_linear_cm2_f16`, MODE 1: one MMA per step, the scale in the decode). Run 3 (H100,
# run-s39b.sh) put the exact form's time in its per-element global loads (the per-step
# scaling: 34%) and bounded the raw MMA rate of 128 x 128 x 32 steps at 101 TFLOP/s (no
# decode, one MMA). Here: the step's scales staged in shared memory (SHSCALE), 64-column
# steps, 256-row M tiles, and the raw rates of those geometries (one_*: wrong numbers by
# design). Each line: the bench's check, kernels and table row.
# Here:   bash docs/experiments/run-s39c.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s39c.sh
# (Run with the switch then called ETVK_Q4_CM2 = 1 / f16 / 0; now ETVK_Q4_MMA = cm2 / cm2_f16 /
# on, as here.)
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
# name  ETVK_Q4_MMA  tile (M x N)  defines
VARIANTS=(
    "f16 cm2_f16 128x128 MODE=1"
    "f16_sh cm2_f16 128x128 MODE=1,SHSCALE=1"
    "f16_sh_k64 cm2_f16 128x128 MODE=1,SHSCALE=1,BK=64"
    "f16_sh_k64_bn256 cm2_f16 256x128 MODE=1,SHSCALE=1,BK=64,BN=256"
    "one cm2 128x128 MODE=2,NODEC=1,NOEPI=1,ONEMMA=1"
    "one_k64 cm2 128x128 MODE=2,NODEC=1,NOEPI=1,ONEMMA=1,BK=64"
    "one_k64_bn256 cm2 256x128 MODE=2,NODEC=1,NOEPI=1,ONEMMA=1,BK=64,BN=256"
)
exp_prepare() {
    exp_carry_bins
    exp_cm2_build "${VARIANTS[@]}"
}
exp_begin "$0" "$@"
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    exp_cm2_table "${VARIANTS[@]}"
} 2>&1 | tee "$OUT/s39c.txt"
