#!/usr/bin/env bash
# Session 34, run 4: the sliced half GEMV's DQ form (ad13745): at M = 1 an 8da4w linear on
# rows of more than 8192 codes quantizes x itself (every workgroup reads the whole raw row
# for its min and max) instead of after a choose_qparams node that also wrote the
# fake-quantized x. `etvk bench linear_dq8ca_q4gsw` with 7823a15's binary (bin_old) against
# this one, interleaved twice, the weight-only op beside it (what the activation side adds);
# unsliced rows as controls (the bench checks every output against f64). Then
# `sdpa_with_kv_cache` as one dispatch (c636bfe) against 7823a15 (bin_old, with its plugin):
# whole-execute GPU time and decode wall time of the tiny Llama exports, and every KV-cache
# fixture through `etvk check` on the GPU.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s34-third.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s34-third.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_old_binary 7823a15
    (cd /tmp/etvk-old && cargo build --release -p etvk-ffi)
    cp /tmp/etvk-old/target/release/libetvk.so .gl/bin_old/
    rm -f .gl/bin/ops-* .gl/bin/barriers-* .gl/bin/q4_linear-*
}
exp_begin "$0" "$@"
{
    mkdir -p /work
    [ -e /work/main ] || ln -s "$(pwd)" /work/main
    .gl/bin/etvk bench read --ceiling-mib 1024 2>&1 | grep -E 'ceiling' || true
    row() {
        "$@" --iters 20 --ceiling-mib 1024 2>&1 |
            grep -E '^\| linear|kernels|rror|MISMATCH' | sed 's/.*kernels/kernels/' | tr '\n' ' ' || true
        echo
    }
    for shape in "4096 14336" "8192 28672" "8192 16384" "14336 4096" "28672 8192"; do
        set -- $shape
        for round in 1 2; do
            for b in bin_old bin; do
                echo -n "$b dq8ca N=$1 K=$2: "
                row .gl/$b/etvk bench linear_dq8ca_q4gsw --m 1 --n "$1" --k "$2"
            done
        done
        echo -n "q4gsw N=$1 K=$2: "
        row .gl/bin/etvk bench linear_q4gsw --m 1 --n "$1" --k "$2"
    done
    echo "== KV-cache attention in one dispatch: bin_old (7823a15) against bin"
    for round in 1 2; do
        for f in e5_llama3_tiny_kvcache_fp32 e6_llama3_tiny_kvcache_8da4w \
            e11_llama31_tiny_kvcache_4w_mqa; do
            for b in bin_old bin; do
                echo -n "$b $f: "
                .gl/$b/etvk generate tests/fixtures/$f/model.pte \
                    --prompt-tokens 1,2,3,4 --max-new 40 2>&1 | grep -E '^decode' | tr '\n' ' '
                ETVK_PROFILE_WHOLE=1 .gl/$b/etvk generate tests/fixtures/$f/model.pte \
                    --prompt-tokens 1,2,3,4 --max-new 40 --profile 2>&1 | grep -E 'whole' | tr '\n' ' '
                echo
            done
        done
    done
    for f in tests/fixtures/e*/; do
        .gl/bin/etvk check "$f" 2>&1 | tail -1
    done
} 2>&1 | tee "$OUT/s34-third.txt"
