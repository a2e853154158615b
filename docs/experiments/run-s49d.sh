#!/usr/bin/env bash
# Session 49, fourth run: the issue's M = 1 rows as built (forward q4gsw and qcs4w, backward,
# at 8192^2, 28672 x 8192, 8192 x 28672), two rounds: on an H200, the 8192^2 floor's
# standing with sessions 47-48's launch (0.60 needs ~15.3 us); on an H100, the same rows
# against sessions 46-48's.
# Here:   rm -rf .gl/bin/* .gl/ovr_* && bash scripts/device-bench.sh prepare && bash docs/experiments/run-s49d.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s49d.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_pack_bins
}
exp_begin "$0" "$@"
{
    exp_header
    for round in 1 2; do
        echo "== round $round"
        for nk in "8192 8192" "28672 8192" "8192 28672"; do
            read -r n k <<<"$nk"
            for op in linear_q4gsw linear_qcs4w linear_q4gsw_backward; do
                echo -n "$op N=$n K=$k: "; exp_row2g "$op" --m 1 --n "$n" --k "$k"
            done
        done
    done
} 2>&1 | tee "$OUT/s49d.txt"
