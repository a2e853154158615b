#!/usr/bin/env bash
# Session 13, run 3: the tensor-core backward with d_out's fp16 hi / lo pairs made once per
# row by the q4_bwd_rowscale pre-pass (256 invocations, eight loads in flight) instead of by
# every column tile's workgroup: the q4_linear tests on the H200, M = 16 / 32 / 64 / 512
# beside the forward, per-node times (ETVK_BENCH_PROFILE) at M = 32, and the split-K slice
# count at M = 32 again (ETVK_Q4_BWD_MMA_WGS = slices x 64 or 224 tiles; slices stay cut
# to 2048 rows, so only more than the default 4 can be tried).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s13-pairs.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s13-pairs.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cargo test --release -p etvk-runtime --test q4_linear --no-run
    rm -f .gl/bin/q4_linear-*
    t=$(ls -t target/release/deps/q4_linear-* | grep -v '\.d$' | head -1)
    cp "$t" .gl/bin/
    rm -rf .gl/exp13
    cp docs/experiments/run-s13-pairs.sh .gl/run-s13-pairs.sh
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
row() {
    $e bench "$@" --iters 20 --ceiling-mib 1024 2>&1 |
        grep -E '^\| linear|check|rror|warn|  node' | tr '\n' ' ' || true
    echo
}
{
    $e bench linear_q4gsw_backward --m 32 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for t in .gl/bin/q4_linear-*; do timeout 120 "$t" --test-threads=2 2>&1 | grep -v ' \.\.\. ok$' | head -60 || true; done
    for s in "32 8192 8192" "32 28672 8192" "32 8192 28672"; do
        set -- $s
        echo -n "forward M=$1 N=$2 K=$3: "; row linear_q4gsw --m $1 --n $2 --k $3
        echo -n "pairs M=$1 N=$2 K=$3: "; row linear_q4gsw_backward --m $1 --n $2 --k $3
        echo -n "nodes M=$1 N=$2 K=$3: "; ETVK_BENCH_PROFILE=1 row linear_q4gsw_backward --m $1 --n $2 --k $3
    done
    for s in "512 8192 8192" "512 28672 8192" "512 8192 28672" "16 8192 8192" "64 8192 8192"; do
        set -- $s
        echo -n "pairs M=$1 N=$2 K=$3: "; row linear_q4gsw_backward --m $1 --n $2 --k $3
    done
    for s in "32 8192 8192 64 6 8" "32 8192 28672 224 6 8"; do
        set -- $s
        m=$1 n=$2 k=$3 t=$4
        shift 4
        for sl in "$@"; do
            echo -n "slices=$sl M=$m N=$n K=$k: "
            ETVK_Q4_BWD_MMA_WGS=$((sl * t)) row linear_q4gsw_backward --m $m --n $n --k $k
        done
    done
    nvidia-smi --query-gpu=clocks.sm,power.draw,clocks_throttle_reasons.active --format=csv || true
} 2>&1 | tee "$OUT/s13-run3.txt"
