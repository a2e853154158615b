#!/usr/bin/env bash
# Session 49, second run: what the exact divisions of act_qparams.glsl (exact_fp.glsl's
# Dekker residuals in place of fma() residuals, which lavapipe rounds twice) cost the 8da4w
# GEMVs that quantize x themselves: the built kernels against 3556734's source (fma
# residuals) by override, three interleaved rounds: M = 1 on 8192^2 (`_dq`), N = 28672 x
# K = 8192 (`_tickets_dq`), 4096^2, and M = 4 on 8192^2 (`_dp4_persist_dq`).
# Here:   rm -rf .gl/bin/* .gl/ovr_* && bash scripts/device-bench.sh prepare && bash docs/experiments/run-s49b.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s49b.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_pack_bins
    exp_shaders_at 3556734
    exp_comp fma q4_linear_gemv_half_dq q4_linear_gemv_half.comp -O -DDQ=1
    exp_comp fma q4_linear_gemv_half_tickets_dq q4_linear_gemv_half.comp -O -DTICKETS=1 -DDQ=1
    exp_comp fma q4_linear_gemv_wide_dp4_persist_dq q4_linear_gemv_wide.comp -O -DDP4=1 -DPERSIST=1 -DRW=8 -DDQ=1
}
exp_begin "$0" "$@"
fma() { ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_fma "$@"; }
{
    exp_header
    for round in 1 2 3; do
        echo "== round $round"
        for mnk in "1 8192 8192" "1 28672 8192" "1 4096 4096" "4 8192 8192"; do
            read -r m n k <<<"$mnk"
            echo -n "exact M=$m N=$n K=$k: "; exp_row2g linear_dq8ca_q4gsw --m "$m" --n "$n" --k "$k"
            echo -n "fma   M=$m N=$n K=$k: "; fma exp_row2g linear_dq8ca_q4gsw --m "$m" --n "$n" --k "$k"
        done
    done
} 2>&1 | tee "$OUT/s49b.txt"
