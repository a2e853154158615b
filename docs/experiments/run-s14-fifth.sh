#!/usr/bin/env bash
# Session 14, run 5: the f16 tensor-core forward (`q4_linear_fwd_mma_*`: the backward's hi / lo
# kernel with the W tile transposed): the q4_linear tests on the H200 (its self-check and
# the forced-f16 test), then the forward at M = 64 .. 2048 over the three shapes with the f16
# kernel from M = 1 (ETVK_Q4_FWD_F16_M=1) and with it off (the int8 kernel), for the
# crossover that sets FWD_F16_MIN_M.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s14-fifth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s14-fifth.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cargo test --release -p etvk-runtime --test q4_linear --no-run
    rm -f .gl/bin/q4_linear-*
    t=$(ls -t target/release/deps/q4_linear-* | grep -v '\.d$' | head -1)
    cp "$t" .gl/bin/
    cp docs/experiments/run-s14-fifth.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
{
    $e bench linear_q4gsw_backward --m 32 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for t in .gl/bin/q4_linear-*; do timeout 120 "$t" --test-threads=2 2>&1 | grep -v ' \.\.\. ok$' | head -60 || true; done
    for m in 512 2048 256 128 64; do
        for s in "8192 8192" "28672 8192" "8192 28672"; do
            set -- $s
            echo -n "fwd f16 M=$m N=$1 K=$2: "; ETVK_Q4_FWD_F16_M=1 bench_row linear_q4gsw --m $m --n $1 --k $2
            echo -n "fwd int8 M=$m N=$1 K=$2: "; ETVK_Q4_FWD_F16_M=1000000 bench_row linear_q4gsw --m $m --n $1 --k $2
        done
    done
} 2>&1 | tee "$OUT/s14-fifth.txt"
