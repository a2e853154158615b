#!/usr/bin/env bash
# Session 38: the attention's key loop with more loads in flight (sdpa.comp: 8 scalars, run 6
# at 99ccb7a: 19.6 us; since bf8ac69 16 4-vectors, here against ETVK_SDPA_VEC=0, the scalar
# rows) against the one-load-per-step loop (run 5: 22.4 us per call of the dim-4096 export's
# `sdpa_with_kv_cache`, D = 128, 32 heads, H100): that export's whole executes and node
# profile, its check, the tiny Llamas' whole executes (D = 32 / 16), and every fixture through
# `etvk check` on the GPU.
# Here:   (export into /tmp/bigfx as run-s38-rows4096.sh says) bash docs/experiments/run-s38-sdpa.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s38-sdpa.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_carry_model /tmp/bigfx/llama_dim4096_8da4w
}
exp_begin "$0" "$@"
m=.gl/models/llama_dim4096_8da4w
whole() {
    ETVK_PROFILE_WHOLE=1 .gl/bin/etvk generate "$1" --prompt-tokens 1,2,3,4 --max-new "$2" --profile 2>&1 |
        grep -E 'whole|^generated' | tr '\n' ' '
    echo
}
{
    nvidia-smi --query-gpu=name --format=csv,noheader || true
    echo "== dim-4096 export: GPU time per whole execute, vector rows (default) / scalar (ETVK_SDPA_VEC=0), twice"
    for v in 1 0 1 0; do
        echo -n "ETVK_SDPA_VEC=$v "
        ETVK_SDPA_VEC=$v whole $m/model.pte 12
    done
    for v in 1 0; do
        echo "-- node profile, ETVK_SDPA_VEC=$v"
        ETVK_SDPA_VEC=$v .gl/bin/etvk generate $m/model.pte --prompt-tokens 1,2,3,4 --max-new 12 --profile 2>&1 |
            sed -n '/GPU profile/,$p' | grep -E 'sdpa|GPU profile'
    done
    .gl/bin/etvk check $m 2>&1 | tail -6
    echo "== tiny Llamas, GPU time per whole execute"
    for f in e5_llama3_tiny_kvcache_fp32 e6_llama3_tiny_kvcache_8da4w e8_qwen_style_tiny_kvcache_8da4w; do
        echo -n "$f: "
        whole tests/fixtures/$f/model.pte 40
    done
    echo "== fixtures on this GPU (etvk check)"
    # shellcheck disable=SC2046
    .gl/bin/etvk check $(for d in tests/fixtures/*/; do [ -f "$d/io.json" ] && echo "$d"; done) 2>&1 | tail -2
} 2>&1 | tee "$OUT/s38-sdpa.txt"
