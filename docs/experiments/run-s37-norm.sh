#!/usr/bin/env bash
# Session 37: the RMSNorm computed inside its 8da4w linears' M = 1 DQ GEMVs (`_dq_norm`, the
# norm node idle) against the norm node (`ETVK_NORM_GEMV=0`: with its row range on rows of
# >= 4096, as before): the linear with x from an untimed RMSNorm (`--x-from norm`, node
# times printed: the norm and the linear's kernel), interleaved twice; the tiny 8da4w
# Llamas' whole-execute GPU time (q / k / v and w1 / w3 read one norm each there, the add
# before it writing the sum alone) with neither, the norm inside the GEMVs only
# (`ETVK_ROPE_SDPA=0`), and both it and the RoPE inside the KV-cache attention
# (`sdpa_kv_rope_*`, the RoPE node gone); then the fixtures and op tests on this GPU.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s37-norm.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s37-norm.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_test_binary ops
    exp_test_binary fixtures
}
exp_begin "$0" "$@"
# One profiled bench on one line: node times and the table row. Usage: prow ENV M N K
prow() {
    (
        [ -n "$1" ] && export "${1?}"
        ETVK_BENCH_PROFILE=1 .gl/bin/etvk bench linear_dq8ca_q4gsw --m "$2" --n "$3" --k "$4" \
            --x-from norm --iters 20 --ceiling-mib 512 2>&1 |
            grep -E 'node (et_vk.rms_norm|et_vk.linear)|^\| linear|MISMATCH|rror' | sed 's/^ *//' |
            tr '\n' ' ' || true
    )
    echo
}
{
    nvidia-smi --query-gpu=name --format=csv,noheader || true
    echo "== M = 1, x from an RMSNorm: node (ETVK_NORM_GEMV=0) against inside the GEMV"
    for shape in "4096 4096" "1024 4096" "14336 4096" "2048 2048" "8192 8192" "28672 8192"; do
        set -- $shape
        for v in node gemv node gemv; do
            echo -n "$v N=$1 K=$2: "
            e=""
            [ $v = node ] && e="ETVK_NORM_GEMV=0"
            prow "$e" 1 "$1" "$2"
        done
    done
    echo "== tiny Llamas, GPU time per whole execute: neither / norm inside / norm + RoPE inside"
    for round in 1 2; do
        for f in e6_llama3_tiny_kvcache_8da4w e8_qwen_style_tiny_kvcache_8da4w e9_llama3_tiny_kvcache_8da4w_emb8 e5_llama3_tiny_kvcache_fp32; do
            for v in neither norm both; do
                echo -n "$v $f: "
                case $v in
                    neither) e="ETVK_NORM_GEMV=0 ETVK_ROPE_SDPA=0" ;;
                    norm) e="ETVK_ROPE_SDPA=0" ;;
                    both) e="ETVK_X=1" ;;
                esac
                env $e ETVK_PROFILE_WHOLE=1 .gl/bin/etvk generate tests/fixtures/$f/model.pte \
                    --prompt-tokens 1,2,3,4 --max-new 40 --profile 2>&1 | grep -E 'whole|^generated' | tr '\n' ' '
                echo
            done
        done
    done
    echo "== fixtures and op families on this GPU"
    "$(ls .gl/bin/fixtures-* | head -1)" --test-threads 1 2>&1 | grep -E 'test result|FAIL|panicked' | head -20
    "$(ls .gl/bin/ops-* | head -1)" quantize unary gated dq_linear norm_writes rms_norm llama attention kv_cache --test-threads 1 2>&1 |
        grep -E '^test |test result|FAIL' | head -30
} 2>&1 | tee "$OUT/s37-norm.txt"
