#!/usr/bin/env bash
# Session 33, run 8: run 7 again after the barrier plan is cached between records (a decode
# re-records every call with the same plan) and the fence poll became the default (500 us):
# host time per execute phase (`ETVK_HOST_TIMING=1`) and decode wall time, polling off
# (`ETVK_FENCE_SPIN_US=0`) against the default, interleaved twice.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s33-seventh.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s33-seventh.sh
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
} 2>&1 | tee "$OUT/s33-seventh.txt"
