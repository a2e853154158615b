#!/usr/bin/env bash
# Session 33, run 6: the fused gated SiLU and residual add + RMSNorm (ops/fusion.rs) on top
# of planned barriers and views sharing storage. GPU time of whole executes
# (`ETVK_PROFILE_WHOLE=1 ... --profile`) interleaved twice in three configurations: before
# this session (`ETVK_VIEW_ALIAS=0 ETVK_BARRIERS=all ETVK_FUSE=0`), without the fusions
# (`ETVK_FUSE=0`), everything (default). Then every fixture through one `etvk check`.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s33-fifth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s33-fifth.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
conf() {
    case $1 in
        old) echo "ETVK_VIEW_ALIAS=0 ETVK_BARRIERS=all ETVK_FUSE=0" ;;
        nofuse) echo "ETVK_FUSE=0" ;;
        new) echo "ETVK_X=1" ;;
    esac
}
{
    .gl/bin/etvk bench read --ceiling-mib 1024 2>&1 | grep -E 'ceiling' || true
    for round in 1 2; do
        for f in e5_llama3_tiny_kvcache_fp32 e6_llama3_tiny_kvcache_8da4w \
            e7_llama3_tiny_kvcache_8da4w_fp16_emb4 e8_qwen_style_tiny_kvcache_8da4w \
            e11_llama31_tiny_kvcache_4w_mqa; do
            for c in old nofuse new; do
                echo -n "$c $f: "
                env $(conf $c) ETVK_PROFILE_WHOLE=1 .gl/bin/etvk generate tests/fixtures/$f/model.pte \
                    --prompt-tokens 1,2,3,4 --max-new 40 --profile 2>&1 | grep -E 'whole' | tr '\n' ' '
                echo
            done
        done
    done
    echo "== decode wall time"
    for f in e5_llama3_tiny_kvcache_fp32 e6_llama3_tiny_kvcache_8da4w e11_llama31_tiny_kvcache_4w_mqa; do
        for c in old new old new; do
            echo -n "$c $f: "
            env $(conf $c) .gl/bin/etvk generate tests/fixtures/$f/model.pte \
                --prompt-tokens 1,2,3,4 --max-new 40 2>&1 | grep -E '^decode' | tr '\n' ' '
            echo
        done
    done
    echo "== every fixture, one etvk check process"
    fx=()
    for d in tests/fixtures/*/; do [ -f "$d/io.json" ] && fx+=("$d"); done
    .gl/bin/etvk check "${fx[@]}" 2>&1 | grep -vE ' PASS$' || true
} 2>&1 | tee "$OUT/s33-fifth.txt"
