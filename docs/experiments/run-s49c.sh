#!/usr/bin/env bash
# Session 49, third run: act_qparams.glsl's divisions with the exact residuals only where the
# device's fma() keeps no low part (lavapipe; `fma_kept_low_part`), against 3556734's source
# (fma residuals always) by override, two interleaved rounds at the shapes of run-s49b
# (where the exact residuals always on cost 0.1-0.9 us); then the q4_linear tests and the
# op families q4_linear and quantize (with the fp16 norm case that failed on lavapipe) and
# the DQ GEMV tests of the ops binary on this device.
# Here:   rm -rf .gl/bin/* .gl/ovr_* && bash scripts/device-bench.sh prepare && bash docs/experiments/run-s49c.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s49c.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_carry_tests
    exp_shaders_at 3556734
    exp_comp fma q4_linear_gemv_half_dq q4_linear_gemv_half.comp -O -DDQ=1
    exp_comp fma q4_linear_gemv_half_tickets_dq q4_linear_gemv_half.comp -O -DTICKETS=1 -DDQ=1
    exp_comp fma q4_linear_gemv_wide_dp4_persist_dq q4_linear_gemv_wide.comp -O -DDP4=1 -DPERSIST=1 -DRW=8 -DDQ=1
}
exp_begin "$0" "$@"
fma() { ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_fma "$@"; }
{
    exp_header
    for round in 1 2; do
        echo "== round $round"
        for mnk in "1 8192 8192" "1 28672 8192" "4 8192 8192"; do
            read -r m n k <<<"$mnk"
            echo -n "built M=$m N=$n K=$k: "; exp_row2g linear_dq8ca_q4gsw --m "$m" --n "$n" --k "$k"
            echo -n "fma   M=$m N=$n K=$k: "; fma exp_row2g linear_dq8ca_q4gsw --m "$m" --n "$n" --k "$k"
        done
    done
    exp_device_tests q4_linear quantize dq_ rms_norm_runs gated_silu
} 2>&1 | tee "$OUT/s49c.txt"
