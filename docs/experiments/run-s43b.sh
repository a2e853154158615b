#!/usr/bin/env bash
# Session 43, second run (run-s43a.sh cut to fit the device time left): the layout probe's
# element maps, the int8 self-check test, then the register-operand int8 forward
# (ETVK_Q4_MMA_REG=1) against the shared-memory tiles at M = 8 / 16 / 32 on 8192^2 and
# 28672 x 8192, and at M = 4 (forced, ETVK_Q4_MMA_M=2) against the built GEMV; M = 1 for the
# ratio.
# Outcome (run 2, an H100, 18bf83f's binary): maps learned, self-check passed, the register
# form 1.2-1.7x slower than the tiles (journal, session 43); it is opt-in since.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s43b.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s43b.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_carry_tests
}
exp_begin "$0" "$@"
row() { EXP_ITERS=20 exp_line .gl/bin/etvk "$@"; }
{
    exp_header
    echo "== the layout probe's element maps"
    RUST_LOG=info .gl/bin/etvk bench linear_q4gsw --m 8 --n 256 --k 256 --iters 2 --ceiling-mib 64 2>&1 |
        grep -iE "element maps|fragments|probe|self-check" || true
    echo "== self-check test"
    q4_tests int8_tensor_core_forward_self_check
    for shape in "8192 8192" "28672 8192"; do
        read -r n k <<<"$shape"
        for m in 8 16 32; do
            echo -n "tiles M=$m N=$n K=$k: "
            row linear_q4gsw --m $m --n "$n" --k "$k"
            echo -n "reg   M=$m N=$n K=$k: "
            ETVK_Q4_MMA_REG=1 row linear_q4gsw --m $m --n "$n" --k "$k"
        done
        echo -n "gemv  M=4 N=$n K=$k: "
        row linear_q4gsw --m 4 --n "$n" --k "$k"
        echo -n "reg   M=4 N=$n K=$k: "
        ETVK_Q4_MMA_REG=1 ETVK_Q4_MMA_M=2 row linear_q4gsw --m 4 --n "$n" --k "$k"
        echo -n "M=1 N=$n K=$k: "
        row linear_q4gsw --m 1 --n "$n" --k "$k"
    done
} 2>&1 | tee "$OUT/s43b.txt"
