#!/usr/bin/env bash
# Session 38: the KV-cache attention on a whole export with D = 128. Run 5 (H100) timed its
# one-load-per-step key loop at 22.4 us per call (dim-4096 export, 32 heads, 16 keys); run 6
# at 99ccb7a (8 scalar loads in flight) 19.6 us. Since bf8ac69 the key rows are read as 16
# 4-vectors at a time (`ETVK_SDPA_VEC=0`: the scalar rows), and since the split commit a
# decode step's keys can be split over workgroups (`ETVK_SDPA_SPLIT=1`; off by default).
# Neither has run on a GPU yet. On a local export with a KV cache of 1024 (dim 4096, 32
# heads, 4 KV heads, one layer, FFN 768: scripts/export_llama_8da4w.py's export() with
# {"dim": 4096, "n_heads": 32, "n_kv_heads": 4, "n_layers": 1, "multiple_of": 256,
# "ffn_dim_multiplier": 0.05} and max_context=1024, into /tmp/bigfx; 41 MB, not committed):
# its check (expected logits from eager PyTorch) in each configuration, the GPU time per
# whole execute of a 600-token generation (the attention's keys grow to 604), the node
# profile, the tiny Llamas, and every fixture through `etvk check` on the GPU.
# Here:   (export first) bash docs/experiments/run-s38-sdpa.sh prepare
#         (.gl must stay under the 64 MiB carry with the tree: no validation .deb in it)
# There:  (device tool, carry [".gl"])  bash .gl/run-s38-sdpa.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_carry_model /tmp/bigfx/llama_dim4096_ctx1024_8da4w
}
exp_begin "$0" "$@"
m=.gl/models/llama_dim4096_ctx1024_8da4w
whole() {
    ETVK_PROFILE_WHOLE=1 .gl/bin/etvk generate "$1" --prompt-tokens 1,2,3,4 --max-new "$2" --profile 2>&1 |
        grep -E 'whole|^generated' | md5sum_tokens
    echo
}
# The generated tokens as a checksum (600 of them), then the whole-execute line.
md5sum_tokens() {
    local line
    while IFS= read -r line; do
        case $line in
            generated:*) echo -n "tokens $(echo "$line" | md5sum | cut -c1-8) " ;;
            *) echo -n "$line " ;;
        esac
    done
}
{
    nvidia-smi --query-gpu=name --format=csv,noheader || true
    echo "== checks: vector rows / scalar rows, split off / on"
    for e in "ETVK_SDPA_VEC=1 ETVK_SDPA_SPLIT=0" "ETVK_SDPA_VEC=0 ETVK_SDPA_SPLIT=0" "ETVK_SDPA_VEC=1 ETVK_SDPA_SPLIT=1"; do
        echo -n "$e: "
        env $e .gl/bin/etvk check $m 2>&1 | tail -1
    done
    echo "== GPU time per whole execute, 600 new tokens (twice each)"
    for round in 1 2; do
        for e in "ETVK_SDPA_VEC=0 ETVK_SDPA_SPLIT=0" "ETVK_SDPA_VEC=1 ETVK_SDPA_SPLIT=0" "ETVK_SDPA_VEC=1 ETVK_SDPA_SPLIT=1"; do
            echo -n "$e: "
            (export $e; whole $m/model.pte 600)
        done
    done
    for e in "ETVK_SDPA_VEC=0 ETVK_SDPA_SPLIT=0" "ETVK_SDPA_VEC=1 ETVK_SDPA_SPLIT=0" "ETVK_SDPA_VEC=1 ETVK_SDPA_SPLIT=1"; do
        echo "-- node profile (12 new tokens and 600), $e"
        for n in 12 600; do
            env $e .gl/bin/etvk generate $m/model.pte --prompt-tokens 1,2,3,4 --max-new $n --profile 2>&1 |
                grep -E 'sdpa|GPU profile'
        done
    done
    echo "== tiny Llamas, GPU time per whole execute (default)"
    for f in e5_llama3_tiny_kvcache_fp32 e6_llama3_tiny_kvcache_8da4w e8_qwen_style_tiny_kvcache_8da4w; do
        echo -n "$f: "
        whole tests/fixtures/$f/model.pte 40
    done
    echo "== fixtures on this GPU (etvk check), default and with the split"
    for e in "ETVK_X=1" "ETVK_SDPA_SPLIT=1"; do
        # shellcheck disable=SC2046
        env $e .gl/bin/etvk check $(for d in tests/fixtures/*/; do [ -f "$d/io.json" ] && echo "$d"; done) 2>&1 | tail -1
    done
} 2>&1 | tee "$OUT/s38-sdpa.txt"
