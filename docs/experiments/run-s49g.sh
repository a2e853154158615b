#!/usr/bin/env bash
# Session 49, sixth run: the DQ half GEMVs with the row's quantization parameters (and the
# norm's scale) computed by one subgroup and shared through a second barrier, and the
# quantization's clamp past the zero point's add (act_qparams.glsl), against HEAD's
# shaders (every invocation computing them; run 5's d2 diagnostic: 0.8-1.5 us) by
# override, three interleaved rounds, 8da4w M = 1: 8192^2 (`_dq`), N = 28672 x K = 8192
# (`_tickets_dq`), 4096^2 (`_early_dq`), N = 8192 x K = 28672 (`_sliced_dq`); M = 4 8192^2
# (`_dp4_persist_dq`, only the clamp changed).
# Here:   rm -rf .gl/bin/* .gl/ovr_* && bash scripts/device-bench.sh prepare && bash docs/experiments/run-s49g.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s49g.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_carry_tests
    exp_shaders_at e42e9b3
    exp_comp_dq_gemvs old
}
exp_begin "$0" "$@"
old() { ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_old "$@"; }
{
    exp_header
    for round in 1 2 3; do
        echo "== round $round"
        for mnk in "1 8192 8192" "1 28672 8192" "1 4096 4096" "1 8192 28672" "4 8192 8192"; do
            read -r m n k <<<"$mnk"
            echo -n "built M=$m N=$n K=$k: "; exp_row2g linear_dq8ca_q4gsw --m "$m" --n "$n" --k "$k"
            echo -n "old   M=$m N=$n K=$k: "; old exp_row2g linear_dq8ca_q4gsw --m "$m" --n "$n" --k "$k"
        done
    done
    exp_device_tests q4_linear quantize dq_ rms_norm_runs gated_silu act_quant norm_writes
} 2>&1 | tee "$OUT/s49g.txt"
