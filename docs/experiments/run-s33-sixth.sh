#!/usr/bin/env bash
# Session 33, run 7: where a small decode's host time goes (`ETVK_HOST_TIMING=1`: inputs,
# resize, record, submit + wait, outputs per execute) and whether polling the fence before
# sleeping in the driver (`ETVK_FENCE_SPIN_US`) shortens the wait; decode wall time per
# token, interleaved twice.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s33-sixth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s33-sixth.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
{
    for round in 1 2; do
        for f in e5_llama3_tiny_kvcache_fp32 e6_llama3_tiny_kvcache_8da4w e11_llama31_tiny_kvcache_4w_mqa; do
            for spin in 0 500; do
                echo -n "spin $spin $f: "
                ETVK_HOST_TIMING=1 ETVK_FENCE_SPIN_US=$spin .gl/bin/etvk generate \
                    tests/fixtures/$f/model.pte --prompt-tokens 1,2,3,4 --max-new 40 2>&1 |
                    grep -E '^decode|host timing' | tr '\n' ' '
                echo
            done
        done
    done
} 2>&1 | tee "$OUT/s33-sixth.txt"
