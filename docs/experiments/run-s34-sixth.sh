#!/usr/bin/env bash
# Session 34, run 8: the DQ half GEMV's start is 1.2-2.2 us longer than the plain one's (run
# 7: the min / max, its barrier, the quantization parameters), and the block's second batch
# is only loaded after it. Does `_early_dq` (both of the first block's batches loaded before
# x; `ETVK_Q4_GEMV=half_early` forces it) win where workgroups walk several blocks, which the
# plain kernel lost by 0.5 us (session 26)? `linear_dq8ca_q4gsw --m 1`, interleaved twice.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s34-sixth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s34-sixth.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
{
    .gl/bin/etvk bench read --ceiling-mib 1024 2>&1 | grep -E 'ceiling' || true
    for shape in "8192 8192" "28672 8192" "14336 4096" "4096 4096"; do
        set -- $shape
        for round in 1 2; do
            for v in auto half_early half_late; do
                echo -n "$v dq8ca N=$1 K=$2: "
                if [ $v = auto ]; then
                    exp_row .gl/bin/etvk bench linear_dq8ca_q4gsw --m 1 --n "$1" --k "$2"
                else
                    ETVK_Q4_GEMV=$v exp_row .gl/bin/etvk bench linear_dq8ca_q4gsw --m 1 --n "$1" --k "$2"
                fi
            done
        done
    done
} 2>&1 | tee "$OUT/s34-sixth.txt"
