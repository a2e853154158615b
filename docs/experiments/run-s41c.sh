#!/usr/bin/env bash
# Session 41, third run: the built persistent int8 GEMV over rows of up to 512 chunks at
# M = 2..7 (select::persist_max_chunks, default now) against the earlier unpersistent form
# (ETVK_Q4_PERSIST_MAX_CHUNKS=256, "old"), weight-only and 8da4w, two interleaved rounds;
# then the whole q4_linear GPU test binary and the q4 / quantize op families with the
# built binary (its tests now expect the persistent form at M = 2 on such rows).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s41c.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s41c.sh
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
        for shape in "4096 14336" "8192 14336" "8192 12288" "8192 16384"; do
            read -r n k <<<"$shape"
            for m in 2 3 4 7; do
                echo -n "r$round old M=$m N=$n K=$k: "
                ETVK_Q4_PERSIST_MAX_CHUNKS=256 exp_row2g linear_q4gsw --m $m --n "$n" --k "$k"
                echo -n "r$round new M=$m N=$n K=$k: "
                exp_row2g linear_q4gsw --m $m --n "$n" --k "$k"
            done
        done
        for m in 2 4; do
            echo -n "r$round old dq8ca M=$m N=4096 K=14336: "
            ETVK_Q4_PERSIST_MAX_CHUNKS=256 exp_row2g linear_dq8ca_q4gsw --m $m --n 4096 --k 14336
            echo -n "r$round new dq8ca M=$m N=4096 K=14336: "
            exp_row2g linear_dq8ca_q4gsw --m $m --n 4096 --k 14336
        done
    done
    echo "== q4_linear tests"
    for t in .gl/bin/q4_linear-*; do
        timeout 300 "$t" --test-threads=2 2>&1 | grep -v ' \.\.\. ok$' | tail -20 || true
    done
    echo "== op families q4_linear, quantize"
    for t in .gl/bin/ops-*; do
        timeout 200 "$t" --test-threads=2 q4_linear quantize 2>&1 | grep -v ' \.\.\. ok$' | tail -20 || true
    done
} 2>&1 | tee "$OUT/s41c.txt"
