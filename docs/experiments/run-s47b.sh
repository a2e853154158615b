#!/usr/bin/env bash
# Session 47, second run: the half GEMV's launch size at M = 1. Run 1 (H100) timed 256
# workgroups at 19.1 us against 264's 19.3 on 8192^2 (1024 blocks: 4 each, against 3.88 and
# a busiest 4), and a plain read of the op's bytes by 528 x 256 invocations (the GEMV's
# count) at 19.1 us, by twice that 17.9, by the default one-element launch 17.0: the GEMV
# runs as fast as a read of its launch shape. Here: launch sizes 264 (built), 256 (same
# rounds, whole), 528 and 1024 (two and four waves), the early form at one block a workgroup,
# interleaved twice; the plain read by 792 x 256 (three workgroups of 512 per SM), and by
# 528 / 1056 x 256 with four loads in flight per invocation (bench_read.comp's UNROLL).
# Any binary from 965a2f4 on (the switches below keep the old launch where they exist).
# Here:   rm -rf .gl/bin/* .gl/ovr_* && bash scripts/device-bench.sh prepare && bash docs/experiments/run-s47b.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s47b.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_pack_bins
    # The plain read with 4 independent loads per invocation and step (bench_read.comp's
    # UNROLL; the override replaces the ceiling's read too: compare us, not fractions).
    exp_comp ru4 bench_read bench_read.comp -O -DUNROLL=4u
}
exp_begin "$0" "$@"
# Since 7ef5773 the built launch is balanced and tickets are the default from 8 blocks per
# workgroup: off here, so that each row's launch is the one it names.
export ETVK_Q4_HALF_BALANCED=0 ETVK_Q4_HALF_TICKETS=0
{
    exp_header
    sweep() {
        for nk in "8192 8192" "28672 8192"; do
            read -r n k <<<"$nk"
            for w in 264 256 528 1024; do
                echo -n "wgs $w N=$n K=$k: "
                ETVK_Q4_WIDE_WGS=$w exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
            done
            echo -n "wgs 256 tickets N=$n K=$k: "
            ETVK_Q4_WIDE_WGS=256 ETVK_Q4_HALF_TICKETS=1 exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
            # One block a workgroup (a launch that is not persistent), both of its batches
            # asked for before x (the early form).
            echo -n "wgs $((n / 8)) early N=$n K=$k: "
            ETVK_Q4_WIDE_WGS=$((n / 8)) ETVK_Q4_GEMV=half_early exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
        done
        echo -n "wgs 264 qcs4w 8192^2: "; exp_row2g linear_qcs4w --m 1 --n 8192 --k 8192
        echo -n "wgs 256 qcs4w 8192^2: "; ETVK_Q4_WIDE_WGS=256 exp_row2g linear_qcs4w --m 1 --n 8192 --k 8192
    }
    echo "== round 1"; sweep
    echo "== same-size read, 792 workgroups of 256"
    for nk in "8192 8192" "28672 8192"; do
        read -r n k <<<"$nk"
        echo -n "N=$n K=$k: "
        ETVK_SAME_READ_GROUPS=792 timeout 120 .gl/bin/etvk bench linear_q4gsw --m 1 --n "$n" \
            --k "$k" --iters 5 --ceiling-mib 2048 2>&1 | grep -E "^same-size" | tr '\n' ' ' || true
        echo
    done
    echo "== same-size read, 528 workgroups of 256, 4 loads in flight per invocation (UNROLL = 4)"
    for nk in "8192 8192" "28672 8192"; do
        read -r n k <<<"$nk"
        for g in 528 1056; do
            echo -n "N=$n K=$k: "
            ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_ru4 ETVK_SAME_READ_GROUPS=$g timeout 120 .gl/bin/etvk bench \
                linear_q4gsw --m 1 --n "$n" --k "$k" --iters 5 --ceiling-mib 2048 2>&1 |
                grep -E "^same-size|replaced" | tr '\n' ' ' || true
            echo
        done
    done
    # SHORT=1 (a short device budget): one round.
    if [ -z "${SHORT:-}" ]; then
        echo "== round 2"; sweep
    fi
} 2>&1 | tee "$OUT/s47b.txt"
