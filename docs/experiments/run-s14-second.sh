#!/usr/bin/env bash
# Session 14, run 2: the tensor-core backward with a d_out scale per row and slice (the
# q4_bwd_rowscale pre-pass as one workgroup per row and slice: 32 workgroups at M = 32 were
# 9 us of 126) and the in-kernel slice sum with 16 outputs' loads in flight per invocation
# (run 1: 409.8 us at N = 28672, its 14 slices summed one load at a time, against 392.1 with
# the reduce dispatch). The q4_linear tests, M = 32 forward and backward with per-node times,
# M = 16 / 64 / 512 backward, M = 2048 backward at 8192^2.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s14-second.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s14-second.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cargo test --release -p etvk-runtime --test q4_linear --no-run
    rm -f .gl/bin/q4_linear-*
    t=$(ls -t target/release/deps/q4_linear-* | grep -v '\.d$' | head -1)
    cp "$t" .gl/bin/
    cp docs/experiments/run-s14-second.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
{
    $e bench linear_q4gsw_backward --m 32 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for t in .gl/bin/q4_linear-*; do timeout 120 "$t" --test-threads=2 2>&1 | grep -v ' \.\.\. ok$' | head -60 || true; done
    for s in "8192 8192" "28672 8192" "8192 28672"; do
        set -- $s
        echo -n "fwd M=32 N=$1 K=$2: "; bench_row linear_q4gsw --m 32 --n $1 --k $2
        echo -n "bwd M=32 N=$1 K=$2: "; bench_row linear_q4gsw_backward --m 32 --n $1 --k $2
        echo -n "bwd nodes M=32 N=$1 K=$2: "
        ETVK_BENCH_PROFILE=1 bench_row linear_q4gsw_backward --m 32 --n $1 --k $2 | cut -c1-400
    done
    for m in 16 64 512; do
        for s in "8192 8192" "28672 8192" "8192 28672"; do
            set -- $s
            echo -n "bwd M=$m N=$1 K=$2: "; bench_row linear_q4gsw_backward --m $m --n $1 --k $2
        done
    done
    echo -n "bwd M=2048 N=8192 K=8192: "; bench_row linear_q4gsw_backward --m 2048 --n 8192 --k 8192
} 2>&1 | tee "$OUT/s14-second.txt"
