#!/usr/bin/env bash
# Session 34, run 3: (1) the op-case families that failed on an H100 in run 1 (fp16 roundings
# folded by the driver; f16_round.glsl since), plus the other fp16-heavy ones; (2) the M = 1
# half GEMV with more, shorter-lived workgroups: `ETVK_Q4_WIDE_WGS` sets the wave the launch
# is sized from (default 264: two 512-wide workgroups per SM, each walking ~3.9 row blocks at
# 8192^2), `ETVK_Q4_GEMV=half_early` / `half_late` the variant (EARLY: the first block's two
# batches loaded before x). At 1024 workgroups every one does one 8-row block at 8192^2, as a
# plain read's many short workgroups do: does the launch's fixed part (~6.3 us against a
# plain read's ~4.5; session 26 run 4) shrink when no workgroup walks? Interleaved twice,
# with the same-size read line.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s34-second.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s34-second.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_test_binary ops
}
exp_begin "$0" "$@"
{
    mkdir -p /work
    [ -e /work/main ] || ln -s "$(pwd)" /work/main
    echo "== op cases (fp16 families)"
    timeout 200 .gl/bin/ops-* --test-threads=4 indexing quantize logic binary unary norm \
        2>&1 | grep -vE ' \.\.\. ok$|^$|^running|^ok ' | head -40 || true
    .gl/bin/etvk bench read --ceiling-mib 1024 2>&1 | grep -E 'ceiling' || true
    row() {
        .gl/bin/etvk bench linear_q4gsw "$@" --iters 20 --ceiling-mib 1024 2>&1 |
            grep -E '^\| linear|kernels|same-size|rror' | sed 's/.*kernels/kernels/' | tr '\n' ' ' || true
        echo
    }
    for shape in "8192 8192" "28672 8192" "4096 4096"; do
        set -- $shape
        for round in 1 2; do
            for v in "264 auto" "528 half_late" "528 half_early" "1024 half_late" "1024 half_early" \
                "3584 half_early"; do
                set -- $shape $v
                [ "$3" = 3584 ] && [ "$1" != 28672 ] && continue
                echo -n "N=$1 K=$2 wgs=$3 $4: "
                if [ "$4" = auto ]; then
                    row --m 1 --n "$1" --k "$2"
                else
                    ETVK_Q4_WIDE_WGS=$3 ETVK_Q4_GEMV=$4 row --m 1 --n "$1" --k "$2"
                fi
            done
        done
    done
} 2>&1 | tee "$OUT/s34-second.txt"
