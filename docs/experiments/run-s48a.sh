#!/usr/bin/env bash
# Session 48, first run: run-s47c (the built half GEMV launch, balanced with tickets from
# 8 blocks per workgroup, against ETVK_Q4_HALF_BALANCED=0 ETVK_Q4_HALF_TICKETS=0), the 8da4w
# linear at N = 28672 x K = 8192 with its new ticketed DQ form against the stride walk
# (ETVK_Q4_HALF_TICKETS=0), interleaved twice; then run-s47b's launch sizes at 8192^2 and
# its plain reads (792 x 256 invocations; 528 / 1056 x 256 with four loads in flight per
# invocation), which tell whether a read needs more invocations or more bytes in flight.
# Here:   rm -rf .gl/bin/* .gl/ovr_* && bash scripts/device-bench.sh prepare && bash docs/experiments/run-s48a.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s48a.sh   (SHORT=1: one round, no
#         launch sizes: for a short device budget)
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_pack_bins
    exp_comp ru4 bench_read bench_read.comp -O -DUNROLL=4u
}
exp_begin "$0" "$@"
old() { ETVK_Q4_HALF_BALANCED=0 ETVK_Q4_HALF_TICKETS=0 "$@"; }
{
    exp_header
    rounds="1 2"
    if [ -n "${SHORT:-}" ]; then rounds=1; fi
    for round in $rounds; do
        echo "== round $round"
        for nk in "8192 8192" "28672 8192"; do
            read -r n k <<<"$nk"
            echo -n "built N=$n K=$k: "; exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
            echo -n "old   N=$n K=$k: "; old exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
        done
        echo -n "tickets, whole wave N=28672: "; ETVK_Q4_HALF_BALANCED=0 exp_row2g linear_q4gsw --m 1 --n 28672 --k 8192
        echo -n "dq8ca built N=28672 K=8192: "; exp_row2g linear_dq8ca_q4gsw --m 1 --n 28672 --k 8192
        echo -n "dq8ca no tickets N=28672 K=8192: "; ETVK_Q4_HALF_TICKETS=0 exp_row2g linear_dq8ca_q4gsw --m 1 --n 28672 --k 8192
    done
    echo -n "built qcs4w 8192^2: "; exp_row2g linear_qcs4w --m 1 --n 8192 --k 8192
    echo -n "old   qcs4w 8192^2: "; old exp_row2g linear_qcs4w --m 1 --n 8192 --k 8192
    if [ -z "${SHORT:-}" ]; then
        echo "== launch sizes at 8192^2 (stride walk, unbalanced: each row's launch is the one it names)"
        for w in 264 256 528 1024; do
            echo -n "wgs $w: "; ETVK_Q4_WIDE_WGS=$w old exp_row2g linear_q4gsw --m 1 --n 8192 --k 8192
        done
        echo -n "wgs 1024 early (one block a workgroup): "
        ETVK_Q4_WIDE_WGS=1024 ETVK_Q4_GEMV=half_early old exp_row2g linear_q4gsw --m 1 --n 8192 --k 8192
    fi
    echo "== same-size reads: 792 x 256; 528 / 1056 x 256 with 4 loads in flight per invocation (UNROLL = 4)"
    for nk in "8192 8192" "28672 8192"; do
        read -r n k <<<"$nk"
        for g in 792 528u 1056u; do
            ovr=()
            [ "${g%u}" != "$g" ] && ovr=(ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_ru4)
            echo -n "N=$n K=$k groups $g: "
            env "${ovr[@]}" ETVK_SAME_READ_GROUPS="${g%u}" timeout 120 .gl/bin/etvk bench linear_q4gsw \
                --m 1 --n "$n" --k "$k" --iters 5 --ceiling-mib 2048 2>&1 |
                grep -E "^same-size|replaced" | tr '\n' ' ' || true
            echo
        done
    done
} 2>&1 | tee "$OUT/s48a.txt"
