#!/usr/bin/env bash
# Session 29, run 1: the 8da4w linear with the separate fake-quant node (40d7dfc,
# `.gl/bin_prev`) against HEAD (`.gl/bin`): the fake-quant done by the choose_qparams node
# (e3f0879) and, at M = 1 with K <= 8192, the half GEMV's _dq forms with the choose node idle
# (255533d), interleaved twice; the weight-only linear beside them; then the per-node profile
# at M = 1; aten.linear (fp32) naive against a9dff67's kernels. (e3f0879's own bench timed one choose node for all instances: its dedupe; fixed
# in the next commit by a copy of x per instance.)
# Here:   copy 40d7dfc's release etvk into .gl/bin_prev/, then
#         scripts/device-bench.sh prepare && bash docs/experiments/run-s29-first.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s29-first.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
{
    .gl/bin/etvk bench read --ceiling-mib 1024 2>&1 | grep -E 'ceiling' || true
    for c in "1 8192 8192" "1 28672 8192" "1 8192 28672" "1 4096 4096" "8 8192 8192" \
        "32 8192 8192"; do
        set -- $c
        for v in bin_prev bin bin_prev bin; do
            echo -n "$v dq8ca M=$1 N=$2 K=$3: "
            exp_row ".gl/$v/etvk" bench linear_dq8ca_q4gsw --m "$1" --n "$2" --k "$3"
        done
        echo -n "bin q4gsw M=$1 N=$2 K=$3: "
        exp_row .gl/bin/etvk bench linear_q4gsw --m "$1" --n "$2" --k "$3"
    done
    # aten.linear (fp32 weights): the naive per-output matmul (bin_prev) against the GEMV /
    # tiled kernels (a9dff67).
    for c in "1 4096 4096" "8 4096 4096" "512 4096 4096" "1 8192 8192" "512 8192 8192"; do
        set -- $c
        for v in bin_prev bin; do
            if [ "$v" = bin_prev ] && [ "$2" = 8192 ] && [ "$1" = 512 ]; then continue; fi
            echo -n "$v linear M=$1 N=$2 K=$3: "
            exp_row ".gl/$v/etvk" bench linear --m "$1" --n "$2" --k "$3"
        done
    done
    for k in 8192 28672; do
        echo "== profile K=$k"
        ETVK_BENCH_PROFILE=1 .gl/bin/etvk bench linear_dq8ca_q4gsw --m 1 --n 8192 --k $k \
            --iters 20 2>&1 | grep node | tail -4
    done
} 2>&1 | tee "$OUT/s29-first.txt"
