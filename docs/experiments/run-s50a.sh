#!/usr/bin/env bash
# Session 50, first run. On an H200: run-s49d's rows first (the issue's M = 1 rows as built:
# the 8192^2 floor's standing, 0.60 needs ~15.3 us). Then, on any card: the half GEMV's PREF
# switch (where a batch's loads are issued against the use of the batch before; session 47's
# timeline had block 0's first batch used at ~5 us and its second at ~7.5, as if the wait
# for the first took in the second's loads): p1 = the batch's first row before the next
# loads, p2 = no load ahead. Three interleaved rounds, M = 1: 8192^2 (plain), 28672 x 8192
# (tickets), 8192 x 28672 (sliced), qcs4w 8192^2, 8da4w 8192^2 (`_dq`). PREF is not in the
# shader since (level or slower): `gemv_half-s50-pref.diff` holds it.
# Here:   rm -rf .gl/bin/* .gl/ovr_* && bash scripts/device-bench.sh prepare && bash docs/experiments/run-s49d.sh prepare && bash docs/experiments/run-s50a.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s50a.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_patched docs/experiments/gemv_half-s50-pref.diff 68badc3
    for v in 1 2; do
        exp_comp "p$v" q4_linear_gemv_half q4_linear_gemv_half.comp -O -DPREF=$v
        exp_comp "p$v" q4_linear_gemv_half_tickets q4_linear_gemv_half.comp -O -DTICKETS=1 -DPREF=$v
        exp_comp "p$v" q4_linear_gemv_half_sliced q4_linear_gemv_half.comp -O -DSLICED=1 -DPREF=$v
        exp_comp "p$v" q4_linear_gemv_half_dq q4_linear_gemv_half.comp -O -DDQ=1 -DPREF=$v
    done
}
exp_begin "$0" "$@"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && [ -f .gl/run-s49d.sh ]; then
    bash .gl/run-s49d.sh
    cp "$OUT/s49d.txt" "$OUT/s50a-h200-rows.txt" 2>/dev/null || true
fi
{
    exp_header
    for round in 1 2 3; do
        echo "== round $round"
        for row in "linear_q4gsw 8192 8192" "linear_q4gsw 28672 8192" "linear_q4gsw 8192 28672" \
            "linear_qcs4w 8192 8192" "linear_dq8ca_q4gsw 8192 8192"; do
            read -r op n k <<<"$row"
            echo -n "built $op N=$n K=$k: "; exp_row2g "$op" --m 1 --n "$n" --k "$k"
            for v in 1 2; do
                echo -n "p$v    $op N=$n K=$k: "
                ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_p$v exp_row2g "$op" --m 1 --n "$n" --k "$k"
            done
        done
    done
} 2>&1 | tee "$OUT/s50a.txt"
