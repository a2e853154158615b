#!/usr/bin/env bash
# Session 41, sixth run: the 8da4w linear at M = 2..7 with the persistent GEMV's DQ form
# finding each row's range and quantization itself, its choose node idle there (default)
# against three limbs of the node's fake-quantized x (ETVK_DQ_PERSIST=0, the node running),
# two rounds; then the quantize family and the 8da4w op tests on the GPU.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s41f.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s41f.sh
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
        for shape in "4096 4096" "8192 8192" "28672 8192" "4096 14336"; do
            read -r n k <<<"$shape"
            for m in 2 3 7; do
                echo -n "r$round old dq8ca M=$m N=$n K=$k: "
                ETVK_DQ_PERSIST=0 exp_row2g linear_dq8ca_q4gsw --m $m --n "$n" --k "$k"
                echo -n "r$round new dq8ca M=$m N=$n K=$k: "
                exp_row2g linear_dq8ca_q4gsw --m $m --n "$n" --k "$k"
            done
        done
    done
    echo "== quantize family and 8da4w op tests"
    for t in .gl/bin/ops-*; do
        timeout 200 "$t" --test-threads=2 quantize act_quant norm_writes rms_norm_runs \
            gated_silu_runs_inside dq_linear 2>&1 | grep -v ' \.\.\. ok$' | tail -20 || true
    done
} 2>&1 | tee "$OUT/s41f.txt"
