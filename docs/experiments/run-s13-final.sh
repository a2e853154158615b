#!/usr/bin/env bash
# Session 13, run 4: the tensor-core backward summing its split-K slices itself (the last
# workgroup of each tile; no reduce dispatch) on the H200: the q4_linear tests, then the
# issue's table, most important rows first (M = 32, then 1, 8, 512, qcs4w, 2048), each line
# written to $OUT as it comes (the run may be cut by the session's device time).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s13-final.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s13-final.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cargo test --release -p etvk-runtime --test q4_linear --no-run
    rm -f .gl/bin/q4_linear-*
    t=$(ls -t target/release/deps/q4_linear-* | grep -v '\.d$' | head -1)
    cp "$t" .gl/bin/
    cp docs/experiments/run-s13-final.sh .gl/run-s13-final.sh
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
row() {
    $e bench "$@" --iters 20 --ceiling-mib 1024 2>&1 |
        grep -E '^\| linear|check|rror|warn' | tr '\n' ' ' | sed 's/.*check/check/' || true
    echo
}
log="$OUT/s13-run4.txt"
{
    $e bench linear_q4gsw_backward --m 32 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for t in .gl/bin/q4_linear-*; do timeout 120 "$t" --test-threads=2 2>&1 | grep -v ' \.\.\. ok$' | head -60 || true; done
    for m in 32 1 8 512; do
        for s in "8192 8192" "28672 8192" "8192 28672"; do
            set -- $s
            echo -n "fwd M=$m N=$1 K=$2: "; row linear_q4gsw --m $m --n $1 --k $2
            echo -n "bwd M=$m N=$1 K=$2: "; row linear_q4gsw_backward --m $m --n $1 --k $2
        done
    done
    for m in 1 32 512; do
        for s in "8192 8192" "28672 8192" "8192 28672"; do
            set -- $s
            echo -n "qcs4w M=$m N=$1 K=$2: "; row linear_qcs4w --m $m --n $1 --k $2
        done
    done
    for s in "8192 8192" "28672 8192" "8192 28672"; do
        set -- $s
        echo -n "bwd M=2048 N=$1 K=$2: "; row linear_q4gsw_backward --m 2048 --n $1 --k $2
    done
    nvidia-smi --query-gpu=clocks.sm,power.draw,clocks_throttle_reasons.active --format=csv || true
} 2>&1 | tee "$log"
