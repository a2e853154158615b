#!/usr/bin/env bash
# Session 41, fourth run: the 8da4w linear at M = 2..7 on the persistent int8 GEMV from the
# raw x in two limbs of q - zp (`q4_linear_gemv_wide_dp4_persist_dq`, default now) against
# three limbs of the choose node's fake-quantized x (ETVK_DQ_PERSIST=0, "old"), two
# interleaved rounds; the weight-only q4gsw beside it for reference; then the quantize op
# family and the 8da4w op tests on the GPU.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s41d.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s41d.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_carry_tests
}
exp_begin "$0" "$@"
{
    exp_header
    for round in 1 2; do
        for shape in "4096 4096" "14336 4096" "4096 14336" "8192 8192" "28672 8192"; do
            read -r n k <<<"$shape"
            for m in 2 4 7; do
                echo -n "r$round old dq8ca M=$m N=$n K=$k: "
                ETVK_DQ_PERSIST=0 exp_row2g linear_dq8ca_q4gsw --m $m --n "$n" --k "$k"
                echo -n "r$round new dq8ca M=$m N=$n K=$k: "
                exp_row2g linear_dq8ca_q4gsw --m $m --n "$n" --k "$k"
                if [ "$round" = 1 ]; then
                    echo -n "r$round q4gsw M=$m N=$n K=$k: "
                    exp_row2g linear_q4gsw --m $m --n "$n" --k "$k"
                fi
            done
        done
    done
    echo "== quantize family and 8da4w op tests"
    for t in .gl/bin/ops-*; do
        timeout 200 "$t" --test-threads=2 quantize act_quant norm_writes rms_norm_runs \
            gated_silu_runs_inside dq_linear 2>&1 | grep -v ' \.\.\. ok$' | tail -20 || true
    done
} 2>&1 | tee "$OUT/s41d.txt"
