#!/usr/bin/env bash
# Session 41, fifth run: the issue's table rows at M = 1 / 8 / 32 (forward and backward, the
# three shapes) with the session's final binary, two rounds, each row against its own
# 2-GiB read ceiling, on whatever card comes (an H200 asked for); the q4_linear GPU tests.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s41e.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s41e.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_carry_tests
}
exp_begin "$0" "$@"
{
    exp_header
    for round in 1 2; do
        for shape in "8192 8192" "28672 8192" "8192 28672"; do
            read -r n k <<<"$shape"
            for m in 1 8 32; do
                echo -n "r$round fwd M=$m N=$n K=$k: "
                exp_row2g linear_q4gsw --m $m --n "$n" --k "$k"
                echo -n "r$round bwd M=$m N=$n K=$k: "
                exp_row2g linear_q4gsw_backward --m $m --n "$n" --k "$k"
            done
        done
    done
    echo "== q4_linear tests"
    for t in .gl/bin/q4_linear-*; do
        timeout 300 "$t" --test-threads=2 2>&1 | grep -v ' \.\.\. ok$' | tail -20 || true
    done
} 2>&1 | tee "$OUT/s41e.txt"
