#!/usr/bin/env bash
# Session 15, run 4: split-K of the f16 forward's codes form (`q4_linear_fwd_mma_c_*_split`,
# the last workgroup of each tile sums the slices and adds the bias): the q4_linear tests on
# the H200, then M = 32 / 64 / 128 / 256 with the f16 forward from M = 1 (split where its
# tiles fall short of a wave) against the int8 kernel, both ops.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s15-fourth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s15-fourth.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cargo test --release -p etvk-runtime --test q4_linear --no-run
    rm -f .gl/bin/q4_linear-*
    t=$(ls -t target/release/deps/q4_linear-* | grep -v '\.d$' | head -1)
    cp "$t" .gl/bin/
    cp docs/experiments/run-s15-fourth.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
{
    $e bench linear_q4gsw_backward --m 32 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for t in .gl/bin/q4_linear-*; do timeout 150 "$t" --test-threads=2 2>&1 | grep -v ' \.\.\. ok$' | head -60 || true; done
    ETVK_PIPELINE_STATS=1 ETVK_Q4_FWD_F16_M=1 $e bench linear_q4gsw --m 128 --n 8192 --k 8192 --iters 5 2>&1 | grep -E "fwd_mma_c.*split" | head -4 || true
    for m in 128 256 64 32; do
        for s in "8192 8192" "8192 28672" "28672 8192"; do
            set -- $s
            [ "$m" = 256 ] && [ "$1" = 28672 ] && continue
            for op in linear_q4gsw linear_qcs4w; do
                [ "$op" = linear_qcs4w ] && [ "$m" != 128 ] && continue
                echo -n "$op f16 M=$m N=$1 K=$2: "; ETVK_Q4_FWD_F16_M=1 bench_row $op --m $m --n $1 --k $2
                echo -n "$op int8 M=$m N=$1 K=$2: "; ETVK_Q4_FWD_F16_M=1000000 bench_row $op --m $m --n $1 --k $2
            done
        done
    done
    echo -n "x16 f16 M=128 N=8192 K=8192: "; ETVK_Q4_FWD_F16_M=1 bench_row linear_q4gsw --m 128 --n 8192 --k 8192 --x-f16
    echo -n "x16 int8 M=128 N=8192 K=8192: "; ETVK_Q4_FWD_F16_M=1000000 bench_row linear_q4gsw --m 128 --n 8192 --k 8192 --x-f16
} 2>&1 | tee "$OUT/s15-fourth.txt"
