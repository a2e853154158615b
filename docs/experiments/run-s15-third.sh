#!/usr/bin/env bash
# Session 15, run 3: the 128-row codes form of the f16 forward in 512 invocations
# (`q4_linear_fwd_mma_c_*t128_n512`, 16 subgroups of 32 x 32) against the 256-invocation one
# (ETVK_Q4_FWD_T128_NT=256: 255 registers, one workgroup per SM) at M = 256 / 512 / 2048,
# fp32 and fp16 x; the q4_linear tests (self-check with the n512 variants); registers of the
# n512 kernels; the backward's 128-row tiles in 512 invocations (`q4_linear_bwd_mma_t128_n512*`)
# against 256 (ETVK_Q4_BWD_T128_NT=256) at M = 512 / 2048 / 128.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s15-third.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s15-third.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cargo test --release -p etvk-runtime --test q4_linear --no-run
    rm -f .gl/bin/q4_linear-*
    t=$(ls -t target/release/deps/q4_linear-* | grep -v '\.d$' | head -1)
    cp "$t" .gl/bin/
    cp docs/experiments/run-s15-third.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
shapes=("8192 8192" "28672 8192" "8192 28672")
{
    $e bench linear_q4gsw_backward --m 32 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for t in .gl/bin/q4_linear-*; do timeout 150 "$t" --test-threads=2 2>&1 | grep -v ' \.\.\. ok$' | head -60 || true; done
    ETVK_PIPELINE_STATS=1 $e bench linear_q4gsw --m 512 --n 8192 --k 8192 --iters 5 2>&1 | grep -E "fwd_mma_c.*n512" | head -4 || true
    ETVK_PIPELINE_STATS=1 $e bench linear_q4gsw --m 512 --n 8192 --k 8192 --iters 5 --x-f16 2>&1 | grep -E "fwd_mma_c.*n512" | head -4 || true
    ETVK_PIPELINE_STATS=1 $e bench linear_q4gsw_backward --m 512 --n 8192 --k 8192 --iters 5 2>&1 | grep -E "bwd_mma_t128" | head -4 || true
    ETVK_Q4_BWD_T128_NT=256 ETVK_PIPELINE_STATS=1 $e bench linear_q4gsw_backward --m 512 --n 8192 --k 8192 --iters 5 2>&1 | grep -E "bwd_mma_t128" | head -4 || true
    for m in 512 2048 128; do
        for s in "${shapes[@]}"; do
            set -- $s
            echo -n "bwd n512 M=$m N=$1 K=$2: "; bench_row linear_q4gsw_backward --m $m --n $1 --k $2
            echo -n "bwd n256 M=$m N=$1 K=$2: "; ETVK_Q4_BWD_T128_NT=256 bench_row linear_q4gsw_backward --m $m --n $1 --k $2
        done
    done
    for m in 512 2048 256; do
        for s in "${shapes[@]}"; do
            set -- $s
            echo -n "n512 M=$m N=$1 K=$2: "; bench_row linear_q4gsw --m $m --n $1 --k $2
            echo -n "n256 M=$m N=$1 K=$2: "; ETVK_Q4_FWD_T128_NT=256 bench_row linear_q4gsw --m $m --n $1 --k $2
        done
    done
    for m in 512 2048; do
        for s in "8192 8192" "28672 8192"; do
            set -- $s
            echo -n "n512 x16 M=$m N=$1 K=$2: "; bench_row linear_q4gsw --m $m --n $1 --k $2 --x-f16
            echo -n "n256 x16 M=$m N=$1 K=$2: "; ETVK_Q4_FWD_T128_NT=256 bench_row linear_q4gsw --m $m --n $1 --k $2 --x-f16
        done
    done
    echo -n "qcs4w n512 M=512: "; bench_row linear_qcs4w --m 512 --n 8192 --k 8192
    echo -n "qcs4w n256 M=512: "; ETVK_Q4_FWD_T128_NT=256 bench_row linear_qcs4w --m 512 --n 8192 --k 8192
} 2>&1 | tee "$OUT/s15-third.txt"
