#!/usr/bin/env bash
# Session 15, run 1: the f16 forward with the weight scales out of the MMAs (codes form,
# `q4_linear_fwd_mma_c_*`: two MMAs per fragment pair, one with fp16 x): the q4_linear tests on
# the H200 (self-check with the codes variants, forced-f16 tests), then the forward against
# the hi / lo form (ETVK_Q4_FWD_CODES=0) at M = 256 / 512 / 2048, fp32 and fp16 x, and the
# codes form from M = 1 against the int8 kernel at M = 32 / 64 / 128 (the threshold).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s15-first.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s15-first.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cargo test --release -p etvk-runtime --test q4_linear --no-run
    rm -f .gl/bin/q4_linear-*
    t=$(ls -t target/release/deps/q4_linear-* | grep -v '\.d$' | head -1)
    cp "$t" .gl/bin/
    cp docs/experiments/run-s15-first.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
shapes=("8192 8192" "28672 8192" "8192 28672")
{
    $e bench linear_q4gsw_backward --m 32 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for t in .gl/bin/q4_linear-*; do timeout 150 "$t" --test-threads=2 2>&1 | grep -v ' \.\.\. ok$' | head -60 || true; done
    ETVK_PIPELINE_STATS=1 $e bench linear_q4gsw --m 512 --n 8192 --k 8192 --iters 5 2>&1 | grep -iE "fwd_mma|regist" | head -8 || true
    for m in 512 2048 256; do
        for s in "${shapes[@]}"; do
            set -- $s
            echo -n "codes M=$m N=$1 K=$2: "; bench_row linear_q4gsw --m $m --n $1 --k $2
            echo -n "hilo M=$m N=$1 K=$2: "; ETVK_Q4_FWD_CODES=0 bench_row linear_q4gsw --m $m --n $1 --k $2
        done
    done
    for m in 512 2048; do
        for s in "${shapes[@]}"; do
            set -- $s
            echo -n "codes x16 M=$m N=$1 K=$2: "; bench_row linear_q4gsw --m $m --n $1 --k $2 --x-f16
            echo -n "hilo x16 M=$m N=$1 K=$2: "; ETVK_Q4_FWD_CODES=0 bench_row linear_q4gsw --m $m --n $1 --k $2 --x-f16
        done
    done
    for m in 128 64 32; do
        for s in "${shapes[@]}"; do
            set -- $s
            echo -n "codes from 1 M=$m N=$1 K=$2: "; ETVK_Q4_FWD_F16_M=1 bench_row linear_q4gsw --m $m --n $1 --k $2
            echo -n "int8 M=$m N=$1 K=$2: "; bench_row linear_q4gsw --m $m --n $1 --k $2
        done
    done
    echo -n "qcs4w codes M=512: "; bench_row linear_qcs4w --m 512 --n 8192 --k 8192
    echo -n "qcs4w hilo M=512: "; ETVK_Q4_FWD_CODES=0 bench_row linear_qcs4w --m 512 --n 8192 --k 8192
} 2>&1 | tee "$OUT/s15-first.txt"
