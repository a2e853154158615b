#!/usr/bin/env bash
# Session 48, second run: the half GEMV's RING switch (override: a block's 8 rows in a ring
# of row slots, each reloaded with the next block's row as soon as it is used: ~7 rows in
# flight instead of ~4, no more values held) against the built kernel, three interleaved rounds
# at M = 1: 8192^2 (q4_linear_gemv_half, balanced launch), N = 28672 x K = 8192
# (`_tickets`), qcs4w 8192^2. Run 1 (H100): a plain read by the GEMV's launch shape took 19.1
# us with one uvec4 in flight per invocation, 17.8 with four.
# Here:   rm -rf .gl/bin/* .gl/ovr_* && bash scripts/device-bench.sh prepare && bash docs/experiments/run-s48b.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s48b.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_pack_bins
    exp_comp ring q4_linear_gemv_half q4_linear_gemv_half.comp -O -DRING=1
    exp_comp ring q4_linear_gemv_half_tickets q4_linear_gemv_half.comp -O -DRING=1 -DTICKETS=1
}
exp_begin "$0" "$@"
ring() { ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_ring "$@"; }
{
    exp_header
    for round in 1 2 3; do
        echo "== round $round"
        for nk in "8192 8192" "28672 8192"; do
            read -r n k <<<"$nk"
            echo -n "built N=$n K=$k: "; exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
            echo -n "ring  N=$n K=$k: "; ring exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
        done
        echo -n "built qcs4w 8192^2: "; exp_row2g linear_qcs4w --m 1 --n 8192 --k 8192
        echo -n "ring  qcs4w 8192^2: "; ring exp_row2g linear_qcs4w --m 1 --n 8192 --k 8192
    done
} 2>&1 | tee "$OUT/s48b.txt"
