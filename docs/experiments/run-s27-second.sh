#!/usr/bin/env bash
# Session 27, run 2 (prepared in session 27, no device then): the 8da4w linear
# (`etvk bench linear_dq8ca_q4gsw`: choose_qparams node + elementwise fake-quant node + the
# q4gsw kernels) against the weight-only q4gsw linear at the same shapes, interleaved twice:
# what int8 dynamic activations cost on top of the 4-bit weights. No overrides.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s27-second.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s27-second.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
{
    for c in "1 8192 8192" "1 28672 8192" "1 8192 28672" "8 8192 8192" "32 8192 8192" \
             "512 8192 8192" "1 4096 4096"; do
        set -- $c
        for op in linear_q4gsw linear_dq8ca_q4gsw linear_q4gsw linear_dq8ca_q4gsw; do
            echo -n "$op M=$1 N=$2 K=$3: "
            exp_row .gl/bin/etvk bench "$op" --m "$1" --n "$2" --k "$3"
        done
    done
} 2>&1 | tee "$OUT/s27-second.txt"
