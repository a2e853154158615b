#!/usr/bin/env bash
# Session 49, fifth run: where the 8da4w M = 1 GEMV's ~2.4 us over the weight-only one go
# (H100 run 2: 8192^2 21.6-21.8 against 18.8 us). `gemv_half-s49-dqdiag.diff`'s DIAG switch
# (wrong results on purpose, so the check reports MISMATCH): bit 0 drops the workgroup
# reduction of x's range (subgroup min / max, shared partials, a barrier), bit 1 the
# quantization parameters (divisions, reciprocal); d3 drops both. Three interleaved rounds at
# 8192^2 (`_dq`) and N = 28672 x K = 8192 (`_tickets_dq`), the weight-only GEMV beside.
# Here:   rm -rf .gl/bin/* .gl/ovr_* && bash scripts/device-bench.sh prepare && bash docs/experiments/run-s49e.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s49e.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_pack_bins
    exp_patched docs/experiments/gemv_half-s49-dqdiag.diff e42e9b3
    for d in 1 2 3; do
        exp_comp "d$d" q4_linear_gemv_half_dq q4_linear_gemv_half.comp -O -DDQ=1 -DDIAG=$d
        exp_comp "d$d" q4_linear_gemv_half_tickets_dq q4_linear_gemv_half.comp -O -DTICKETS=1 -DDQ=1 -DDIAG=$d
    done
}
exp_begin "$0" "$@"
{
    exp_header
    for round in 1 2 3; do
        echo "== round $round"
        for nk in "8192 8192" "28672 8192"; do
            read -r n k <<<"$nk"
            echo -n "q4gsw N=$n K=$k: "; exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
            echo -n "dq8ca N=$n K=$k: "; exp_row2g linear_dq8ca_q4gsw --m 1 --n "$n" --k "$k"
            for d in 1 2 3; do
                echo -n "dq8ca d$d N=$n K=$k: "
                ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_d$d exp_row2g linear_dq8ca_q4gsw --m 1 --n "$n" --k "$k"
            done
        done
    done
} 2>&1 | tee "$OUT/s49e.txt"
