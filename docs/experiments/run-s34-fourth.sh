#!/usr/bin/env bash
# Session 34, run 6: the DQ half GEMVs' row min / max by subgroup reductions (2e6c54e)
# against c636bfe (bin_old: the shared-memory tree, two barriers, 15- and 31-step serial
# folds), `etvk bench linear_dq8ca_q4gsw --m 1`, interleaved twice, the weight-only op beside
# (the DQ GEMV's node took ~2.7 us over the plain one at 8192^2 on an H100, run 5); then the
# 8da4w tiny Llama's whole-execute GPU time.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s34-fourth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s34-fourth.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_old_binary c636bfe
    (cd /tmp/etvk-old && cargo build --release -p etvk-ffi)
    cp /tmp/etvk-old/target/release/libetvk.so .gl/bin_old/
    rm -f .gl/bin/ops-* .gl/bin/barriers-* .gl/bin/q4_linear-*
}
exp_begin "$0" "$@"
{
    .gl/bin/etvk bench read --ceiling-mib 1024 2>&1 | grep -E 'ceiling' || true
    row() {
        "$@" --iters 20 --ceiling-mib 1024 2>&1 |
            grep -E '^\| linear|kernels|rror|MISMATCH' | sed 's/.*kernels/kernels/' | tr '\n' ' ' || true
        echo
    }
    for shape in "8192 8192" "4096 4096" "14336 4096" "28672 8192" "4096 14336" "8192 28672"; do
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
    for round in 1 2; do
        for f in e6_llama3_tiny_kvcache_8da4w e8_qwen_style_tiny_kvcache_8da4w; do
            for b in bin_old bin; do
                echo -n "$b $f: "
                ETVK_PROFILE_WHOLE=1 .gl/$b/etvk generate tests/fixtures/$f/model.pte \
                    --prompt-tokens 1,2,3,4 --max-new 40 --profile 2>&1 | grep -E 'whole' | tr '\n' ' '
                echo
            done
        done
    done
    for f in tests/fixtures/e6*/ tests/fixtures/e7*/ tests/fixtures/e8*/ tests/fixtures/h*/; do
        .gl/bin/etvk check "$f" 2>&1 | tail -1
    done
} 2>&1 | tee "$OUT/s34-fourth.txt"
