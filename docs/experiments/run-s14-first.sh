#!/usr/bin/env bash
# Prepared in session 13 for the next session's first device call (docs/status.md, Next 1-2):
# the tensor-core backward summing its split-K slices in the kernel
# (q4_linear_bwd_mma-inkernel-reduce.diff, applied to the tree before `prepare`), the
# q4_linear tests on the H200, then M = 32 / 512 forward and backward over the three shapes,
# each beside the same op with q4_linear_reduce's tail in batches of four
# (q4_linear_reduce-tail4.diff, by ETVK_SPIRV_OVERRIDE_DIR: it changes the forward's split-K
# too); then the M = 1 half GEMV with its block sums by subgroup reductions
# (q4_linear_gemv_half.comp SUBGROUP_SUM = 1: subgroupAdd; 2: a transposing butterfly of xor
# shuffles), three rounds alternating with the built kernel (the 0.60 floor at 8192^2 needs
# ~0.3 us).
# Here:   git apply docs/experiments/q4_linear_bwd_mma-inkernel-reduce.diff
#         scripts/device-bench.sh prepare && bash docs/experiments/run-s14-first.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s14-first.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    grep -q "binding = 6) coherent buffer Count" shaders/q4_linear_bwd_mma.comp ||
        { echo "apply docs/experiments/q4_linear_bwd_mma-inkernel-reduce.diff first" >&2; exit 1; }
    cargo test --release -p etvk-runtime --test q4_linear --no-run
    rm -f .gl/bin/q4_linear-*
    t=$(ls -t target/release/deps/q4_linear-* | grep -v '\.d$' | head -1)
    cp "$t" .gl/bin/
    rm -rf .gl/exp14 && mkdir -p .gl/exp14/tail4 .gl/exp14/src
    git show HEAD:shaders/q4_linear_reduce.comp > .gl/exp14/src/q4_linear_reduce.comp
    (cd .gl/exp14/src && patch -s -p2 < ../../../docs/experiments/q4_linear_reduce-tail4.diff)
    glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I shaders \
        -o .gl/exp14/tail4/q4_linear_reduce.spv .gl/exp14/src/q4_linear_reduce.comp
    for v in 1 2; do
        mkdir -p .gl/exp14/gsum$v
        glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I shaders -DNT=512 -DSUBGROUP_SUM=$v \
            -o .gl/exp14/gsum$v/q4_linear_gemv_half_n512.spv shaders/q4_linear_gemv_half.comp
    done
    cp docs/experiments/run-s14-first.sh .gl/run-s14-first.sh
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
row() { bench_row "$@"; }
{
    $e bench linear_q4gsw_backward --m 32 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for t in .gl/bin/q4_linear-*; do timeout 120 "$t" --test-threads=2 2>&1 | grep -v ' \.\.\. ok$' | head -60 || true; done
    for m in 32 512; do
        for s in "8192 8192" "28672 8192" "8192 28672"; do
            set -- $s
            for op in linear_q4gsw linear_q4gsw_backward; do
                echo -n "$op M=$m N=$1 K=$2: "; row $op --m $m --n $1 --k $2
                echo -n "$op tail4 M=$m N=$1 K=$2: "
                ETVK_SPIRV_OVERRIDE_DIR=$PWD/.gl/exp14/tail4 row $op --m $m --n $1 --k $2
            done
        done
    done
    for i in 1 2 3; do
        for s in "8192 8192" "28672 8192"; do
            set -- $s
            echo -n "gemv #$i M=1 N=$1 K=$2: "; row linear_q4gsw --m 1 --n $1 --k $2
            for v in 1 2; do
                echo -n "gemv gsum$v #$i M=1 N=$1 K=$2: "
                ETVK_SPIRV_OVERRIDE_DIR=$PWD/.gl/exp14/gsum$v row linear_q4gsw --m 1 --n $1 --k $2
            done
        done
    done
    echo -n "nodes M=32: "; ETVK_BENCH_PROFILE=1 row linear_q4gsw_backward --m 32 --n 8192 --k 8192
    for s in "8192 8192" "28672 8192" "8192 28672"; do
        set -- $s
        echo -n "bwd M=2048 N=$1 K=$2: "; row linear_q4gsw_backward --m 2048 --n $1 --k $2
    done
} 2>&1 | tee "$OUT/s14-first.txt"
