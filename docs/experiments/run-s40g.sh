#!/usr/bin/env bash
# Session 40, ninth run: the exact cooperative_matrix2 forward (now built with BLK32 and
# SHSCALE) at larger tiles, where session 39 saw the raw MMA loop rise from 101-137 (128 x
# 128) to 166-170 TFLOP/s (256 rows): 256 activation rows (BN), 256 weight rows (BM), both.
# Against the default coopmat1 kernel and the built cm2 (128 x 128).
# Here:   bash docs/experiments/run-s40g.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s40g.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
# name  ETVK_Q4_MMA  tile (M x N)  defines
VARIANTS=(
    "x128 cm2 128x128 MODE=2,BLK32=1,SHSCALE=1"
    "xbn256 cm2 256x128 MODE=2,BLK32=1,SHSCALE=1,BN=256"
    "xbm256 cm2 128x256 MODE=2,BLK32=1,SHSCALE=1,BM=256"
    "x256 cm2 256x256 MODE=2,BLK32=1,SHSCALE=1,BM=256,BN=256"
)
exp_prepare() {
    exp_carry_bins
    exp_cm2_build "${VARIANTS[@]}"
}
exp_begin "$0" "$@"
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    exp_cm2_table "${VARIANTS[@]}"
} 2>&1 | tee "$OUT/s40g.txt"
