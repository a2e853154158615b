#!/usr/bin/env bash
# Session 15, run 2: the q4_linear tests on the H200 at the thresholds of this commit, the
# codes-form kernels' registers, the full table of scripts/device-bench.sh, the thresholds
# (qcs4w at M = 256, both ops at M = 128 over N = 28672: default against int8), and the half
# GEMV with blocks of 4 rows (RW = 4: a shorter last block per workgroup) by override.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s15-second.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s15-second.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cargo test --release -p etvk-runtime --test q4_linear --no-run
    rm -f .gl/bin/q4_linear-*
    t=$(ls -t target/release/deps/q4_linear-* | grep -v '\.d$' | head -1)
    cp "$t" .gl/bin/
    mkdir -p .gl/ovr_rw4
    glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I shaders -DNT=512 -DRW=4 \
        -o .gl/ovr_rw4/q4_linear_gemv_half_n512.spv shaders/q4_linear_gemv_half.comp
    cp docs/experiments/run-s15-second.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
{
    $e bench linear_q4gsw_backward --m 32 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for t in .gl/bin/q4_linear-*; do timeout 150 "$t" --test-threads=2 2>&1 | grep -v ' \.\.\. ok$' | head -60 || true; done
    ETVK_PIPELINE_STATS=1 $e bench linear_q4gsw --m 512 --n 8192 --k 8192 --iters 5 2>&1 | grep -E "fwd_mma_c" | head -8 || true
    ETVK_PIPELINE_STATS=1 $e bench linear_q4gsw --m 512 --n 8192 --k 8192 --iters 5 --x-f16 2>&1 | grep -E "fwd_mma_c" | head -8 || true
    for s in "8192 8192" "28672 8192" "8192 28672"; do
        set -- $s
        echo -n "qcs4w default M=256 N=$1 K=$2: "; bench_row linear_qcs4w --m 256 --n $1 --k $2
        echo -n "qcs4w int8 M=256 N=$1 K=$2: "; ETVK_Q4_FWD_F16_M=1000000 bench_row linear_qcs4w --m 256 --n $1 --k $2
    done
    for op in linear_q4gsw linear_qcs4w; do
        echo -n "$op default M=128 N=28672: "; bench_row $op --m 128 --n 28672 --k 8192
        echo -n "$op int8 M=128 N=28672: "; ETVK_Q4_FWD_F16_M=1000000 bench_row $op --m 128 --n 28672 --k 8192
    done
    for r in 1 2 3; do
        for s in "8192 8192" "28672 8192"; do
            set -- $s
            echo -n "gemv built #$r N=$1 K=$2: "; bench_row linear_q4gsw --m 1 --n $1 --k $2
            echo -n "gemv rw4 #$r N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_rw4 bench_row linear_q4gsw --m 1 --n $1 --k $2
        done
    done
} 2>&1 | tee "$OUT/s15-second.txt"
OUT="$OUT" bash .gl/device-bench.sh
