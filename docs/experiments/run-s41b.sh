#!/usr/bin/env bash
# Session 41, second run: (1) run 1's A/B of the M = 1 half GEMV over rows of up to 512
# chunks in one workgroup (ETVK_Q4_HALF_MAX_CHUNKS=256 = "old"), now with slices kept at 256
# chunks on longer rows (8192 x 28672 must be level), on whatever card comes (an H200 asked
# for); (2) an experiment: the persistent int8 GEMV (M = 2..7) over rows of up to 512 chunks
# in one workgroup of up to 512 (ETVK_Q4_PERSIST_MAX_CHUNKS=512, "p512") against the
# unpersistent wide form those rows take now; (3) the whole q4_linear GPU test binary, its
# GEMV tests again with the persistent experiment on, and the q4 / quantize op families.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s41b.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s41b.sh
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
        for shape in "8192 8192" "4096 14336" "8192 14336" "4096 11008" "8192 16384" "8192 28672"; do
            read -r n k <<<"$shape"
            echo -n "r$round old N=$n K=$k: "
            ETVK_Q4_HALF_MAX_CHUNKS=256 exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
            echo -n "r$round new N=$n K=$k: "
            exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
        done
        echo -n "r$round old dq8ca silu N=4096 K=14336: "
        ETVK_Q4_HALF_MAX_CHUNKS=256 exp_row2g linear_dq8ca_q4gsw --m 1 --n 4096 --k 14336 --x-from silu
        echo -n "r$round new dq8ca silu N=4096 K=14336: "
        exp_row2g linear_dq8ca_q4gsw --m 1 --n 4096 --k 14336 --x-from silu
    done
    echo "== persistent int8 GEMV over rows of up to 512 chunks (M = 2..7)"
    for round in 1 2; do
        for shape in "4096 14336" "8192 14336" "4096 11008" "8192 16384"; do
            read -r n k <<<"$shape"
            for m in 2 4; do
                echo -n "r$round built M=$m N=$n K=$k: "
                exp_row2g linear_q4gsw --m $m --n "$n" --k "$k"
                echo -n "r$round p512 M=$m N=$n K=$k: "
                ETVK_Q4_PERSIST_MAX_CHUNKS=512 exp_row2g linear_q4gsw --m $m --n "$n" --k "$k"
            done
        done
    done
    echo "== q4_linear tests"
    for t in .gl/bin/q4_linear-*; do
        timeout 300 "$t" --test-threads=2 2>&1 | grep -v ' \.\.\. ok$' | tail -20 || true
        echo "-- GEMV tests with ETVK_Q4_PERSIST_MAX_CHUNKS=512"
        ETVK_Q4_PERSIST_MAX_CHUNKS=512 timeout 200 "$t" --test-threads=2 gemv persist half \
            2>&1 | grep -v ' \.\.\. ok$' | tail -20 || true
    done
    echo "== op families q4_linear, quantize"
    for t in .gl/bin/ops-*; do
        timeout 200 "$t" --test-threads=2 q4_linear quantize 2>&1 | grep -v ' \.\.\. ok$' | tail -20 || true
    done
} 2>&1 | tee "$OUT/s41b.txt"
