#!/usr/bin/env bash
# Session 26, run 4 (no overrides): is the M = 1 half GEMV's time set by the SM with the
# most row blocks? 264 workgroups (two per SM) walk N / 8 blocks: at N = 8192 (1024
# blocks, 3.88 per workgroup) some SMs do 8 blocks, the mean is 7.76. If the time follows
# the busiest SM, N = 7920 (990 blocks), 8192 and 8448 (1056 = 4 x 264) take about the
# same time; if it follows the bytes, 8448 takes 3% longer than 8192. N = 7392 (3.5 blocks
# per workgroup) tells how workgroups pair on SMs (7 blocks per SM or 8 and 6). K = 8192
# throughout; three rounds interleaved; the same-size plain read beside each.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s26-fourth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s26-fourth.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
row() {
    .gl/bin/etvk bench linear_q4gsw --m 1 --n "$1" --k "$2" --iters 30 --ceiling-mib 1024 2>&1 |
        grep -E '^\| linear|same-size|MISMATCH|rror' | tr '\n' ' ' || true
    echo
}
{
    for r in 1 2 3; do
        for n in 6336 7392 7920 8192 8448 8976; do echo -n "round $r N=$n K=8192: "; row $n 8192; done
        for n in 28672 29568; do echo -n "round $r N=$n K=8192: "; row $n 8192; done
    done
} 2>&1 | tee "$OUT/s26-fourth.txt"
