#!/usr/bin/env bash
# Session 25, run 8 (diagnostic; results wrong on purpose): would a weight layout with each
# GEMV invocation's 4 rows x 8 bytes together (two 16-byte loads per batch instead of four
# 8-byte ones, a warp's batch one contiguous KiB) speed up the M = 1 half GEMV? The built
# kernel against DIAG_QUADLOAD (q4_linear_gemv_half-s25-quadload.diff: the same bytes read
# in that pattern from today's layout), interleaved three times. A layout change would touch
# every kernel that reads the packed weights, so this asks first.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s25-seventh.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s25-seventh.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    rm -rf .gl/ovr_quad
    exp_patched docs/experiments/q4_linear_gemv_half-s25-quadload.diff 98d6d9a
    exp_comp quad q4_linear_gemv_half q4_linear_gemv_half.comp -O -DDIAG_QUADLOAD=1
}
exp_begin "$0" "$@"
{
    for c in "8192 8192" "28672 8192"; do
        set -- $c
        for v in built quad built quad built quad; do
            echo -n "$v N=$1 K=$2: "
            ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v exp_row .gl/bin/etvk bench linear_q4gsw --m 1 --n "$1" --k "$2"
        done
    done
} 2>&1 | tee "$OUT/s25-seventh.txt"
