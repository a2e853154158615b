#!/usr/bin/env bash
# Session 39, sixth run: the built value loop of 16 keys (run 7's best without a short-context
# cost) with the split's wave of 264 (built) and 528 workgroups (ETVK_SDPA_WAVE), at 12 and
# 600 new tokens on the dim-4096 export (run-s38-sdpa.sh's header says how to make it); the
# node profile at 600; the tiny Llamas; every fixture on the GPU.
# Here:   bash docs/experiments/run-s39f.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s39f.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_carry_model /tmp/bigfx/llama_dim4096_ctx1024_8da4w
}
exp_begin "$0" "$@"
m=.gl/models/llama_dim4096_ctx1024_8da4w
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    for round in 1 2 3; do
        for wave in 264 528; do
            for n in 12 600; do
                echo -n "wave $wave, $n tokens: "
                ETVK_SDPA_WAVE=$wave exp_whole $m/model.pte $n
            done
        done
    done
    for wave in 264 528; do
        echo "-- node profile, 600 tokens, wave $wave"
        ETVK_SDPA_WAVE=$wave timeout 120 .gl/bin/etvk generate $m/model.pte --prompt-tokens 1,2,3,4 \
            --max-new 600 --profile 2>&1 | grep -A14 'GPU profile' | head -16
        echo -n "check: "
        ETVK_SDPA_WAVE=$wave timeout 60 .gl/bin/etvk check $m 2>&1 | tail -1
    done
    echo "== tiny Llamas, GPU time per whole execute"
    for f in e5_llama3_tiny_kvcache_fp32 e6_llama3_tiny_kvcache_8da4w e8_qwen_style_tiny_kvcache_8da4w; do
        echo -n "$f: "
        exp_whole tests/fixtures/$f/model.pte 40
    done
    echo "== fixtures on this GPU"
    # shellcheck disable=SC2046
    timeout 300 .gl/bin/etvk check $(for d in tests/fixtures/*/; do [ -f "$d/io.json" ] && echo "$d"; done) 2>&1 | tail -1
} 2>&1 | tee "$OUT/s39f.txt"
