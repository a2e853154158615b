#!/usr/bin/env bash
# Prepared in session 25: is the native f16 forward's hi / lo form right past k = 3744? Its
# emulated build on lavapipe loses the products of steps 118 and on (journal, session 25:
# trip-count dependent, maybe lavapipe's); the runtime keeps rows longer than 3744 off that
# form (HILO_FWD_MAX_K). Here the guard is lifted (ETVK_Q4_HILO_MAX_K) and the codes form
# turned off (ETVK_Q4_FWD_CODES=0), M = 128 (the f16 forward's threshold), and the bench's
# f64 check says ok or MISMATCH; the kernel list must name q4_linear_fwd_mma_t* (not _c_).
# If every row is ok, keep the guard for the emulated kernel only.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s26-second.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s26-second.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
{
    for k in 3744 3776 4096 8192 28672; do
        for m in 128 512; do
            echo -n "hi/lo M=$m N=8192 K=$k: "
            ETVK_Q4_FWD_CODES=0 ETVK_Q4_HILO_MAX_K=1000000 exp_row .gl/bin/etvk bench linear_q4gsw \
                --m "$m" --n 8192 --k "$k"
        done
    done
} 2>&1 | tee "$OUT/s26-second.txt"
