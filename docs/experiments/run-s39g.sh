#!/usr/bin/env bash
# Session 39, seventh run: the built attention (value loop of 16 keys, split wave 528) on the
# dim-4096 export at 12 / 600 new tokens, and the tiny Llamas against the 8-key value loop
# (sdpa.comp VK=8u through ETVK_SPIRV_OVERRIDE_DIR) and the split off: run 8 had e8 at 85.8
# us per execute against run 1's 83.5 (8 keys, split off), e5 / e6 faster.
# Here:   bash docs/experiments/run-s39g.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s39g.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_carry_model /tmp/bigfx/llama_dim4096_ctx1024_8da4w
    local dt
    for dt in "f32 float" "f16 float16_t"; do
        set -- $dt
        exp_comp vk8 sdpa_kv_$1 sdpa.comp -O -DDTYPE=$2 -DFUSED_KV=1 -DVK=8u
        exp_comp vk8 sdpa_kv_rope_$1 sdpa.comp -O -DDTYPE=$2 -DFUSED_KV=1 -DROPE=1 -DVK=8u
        exp_comp vk8 sdpa_kv_rope_hf_$1 sdpa.comp -O -DDTYPE=$2 -DFUSED_KV=1 -DROPE=2 -DVK=8u
    done
}
exp_begin "$0" "$@"
m=.gl/models/llama_dim4096_ctx1024_8da4w
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    for round in 1 2 3; do
        for n in 12 600; do
            echo -n "built, $n tokens: "
            exp_whole $m/model.pte $n
        done
        for f in e5_llama3_tiny_kvcache_fp32 e6_llama3_tiny_kvcache_8da4w e8_qwen_style_tiny_kvcache_8da4w; do
            for e in "ETVK_X=1" "ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_vk8" "ETVK_SDPA_SPLIT=0"; do
                echo -n "$f $e: "
                (export $e; exp_whole tests/fixtures/$f/model.pte 40)
            done
        done
    done
} 2>&1 | tee "$OUT/s39g.txt"
