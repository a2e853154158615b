#!/usr/bin/env bash
# Session 35: the 8da4w linears' M = 1 DQ GEMVs reading the row range the RMSNorm before them
# wrote (`_dq_mm`, ops/quantize.rs `plan_row_minmax`) against the built DQ forms that reduce
# it themselves (`ETVK_ROW_RANGE=0`), both with x written by an untimed RMSNorm
# (`--x-from-norm`), interleaved twice; the 8da4w tiny Llamas' whole-execute GPU time with and
# without; the RMSNorm's node time at 512 invocations per row (default for rows of >= 4096)
# against the old 64 (`ETVK_NORM_LANES=64`); then the quantize / llama op families on this GPU.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s35-mm.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s35-mm.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    cargo test --release -p etvk-tests --test ops --no-run
    rm -f .gl/bin/ops-*
    cp "$(ls -t target/release/deps/ops-* | grep -v '\.d$' | head -1)" .gl/bin/
}
exp_begin "$0" "$@"
{
    nvidia-smi --query-gpu=name --format=csv,noheader || true
    .gl/bin/etvk bench read --ceiling-mib 1024 2>&1 | grep -E 'ceiling' || true
    for shape in "8192 8192" "4096 4096" "1024 4096" "14336 4096" "4096 14336" "28672 8192" "8192 28672"; do
        set -- $shape
        for v in reduce range reduce range; do
            echo -n "$v dq8ca N=$1 K=$2: "
            if [ $v = reduce ]; then
                ETVK_ROW_RANGE=0 exp_row .gl/bin/etvk bench linear_dq8ca_q4gsw --m 1 --n "$1" --k "$2" --x-from-norm
            else
                exp_row .gl/bin/etvk bench linear_dq8ca_q4gsw --m 1 --n "$1" --k "$2" --x-from-norm
            fi
        done
        echo -n "q4gsw N=$1 K=$2: "
        exp_row .gl/bin/etvk bench linear_q4gsw --m 1 --n "$1" --k "$2"
    done
    echo "== rms_norm node (untimed helper of --x-from-norm), lanes 64 against the default"
    for k in 2048 4096 8192; do
        for m in 1 32; do
            for l in 64 default 64 default; do
                echo -n "norm lanes=$l M=$m N=$k: "
                e=""
                [ $l = 64 ] && e="ETVK_NORM_LANES=64"
                env $e ETVK_BENCH_PROFILE=1 .gl/bin/etvk bench linear_dq8ca_q4gsw --m $m --n 1024 --k $k \
                    --x-from-norm --iters 20 --ceiling-mib 256 2>&1 | grep -E 'rms_norm|^\| linear' | tr '\n' ' '
                echo
            done
        done
    done
    for round in 1 2; do
        for f in e6_llama3_tiny_kvcache_8da4w e8_qwen_style_tiny_kvcache_8da4w e9_llama3_tiny_kvcache_8da4w_emb8; do
            for v in reduce range; do
                echo -n "$v $f: "
                e=""
                [ $v = reduce ] && e="ETVK_ROW_RANGE=0"
                env $e ETVK_PROFILE_WHOLE=1 .gl/bin/etvk generate tests/fixtures/$f/model.pte \
                    --prompt-tokens 1,2,3,4 --max-new 40 --profile 2>&1 | grep -E 'whole|^decode' | tr '\n' ' '
                echo
            done
        done
    done
    echo "== op families on this GPU"
    "$(ls .gl/bin/ops-* | head -1)" quantize norm_writes act_quant llama --test-threads 1 2>&1 |
        grep -E '^test |test result|FAIL' | head -40
} 2>&1 | tee "$OUT/s35-mm.txt"
