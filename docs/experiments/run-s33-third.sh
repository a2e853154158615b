#!/usr/bin/env bash
# Session 33, run 4: contiguous copies sharing storage (view_alias.rs) on top of the planned
# barriers. GPU time of whole executes (`ETVK_PROFILE_WHOLE=1 ... --profile`) in three
# configurations, interleaved twice: before this session (`ETVK_VIEW_ALIAS=0
# ETVK_BARRIERS=all`), planned barriers only (`ETVK_VIEW_ALIAS=0`), both (default). Then
# every fixture through one `etvk check` process (the loader kept open: run 2's failed at
# its second backend), and the decode's wall time before / after.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s33-third.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s33-third.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
conf() {
    case $1 in
        old) echo "ETVK_VIEW_ALIAS=0 ETVK_BARRIERS=all" ;;
        planned) echo "ETVK_VIEW_ALIAS=0" ;;
        new) echo "" ;;
    esac
}
{
    .gl/bin/etvk bench read --ceiling-mib 1024 2>&1 | grep -E 'ceiling' || true
    echo "== every fixture, one etvk check process"
    fx=()
    for d in tests/fixtures/*/; do [ -f "$d/io.json" ] && fx+=("$d"); done
    .gl/bin/etvk check "${fx[@]}" 2>&1 | grep -vE ' PASS$' || true
    for round in 1 2; do
        for f in e5_llama3_tiny_kvcache_fp32 e6_llama3_tiny_kvcache_8da4w \
            e7_llama3_tiny_kvcache_8da4w_fp16_emb4 e11_llama31_tiny_kvcache_4w_mqa; do
            for c in old planned new; do
                echo -n "$c $f: "
                env $(conf $c) ETVK_PROFILE_WHOLE=1 .gl/bin/etvk generate tests/fixtures/$f/model.pte \
                    --prompt-tokens 1,2,3,4 --max-new 40 --profile 2>&1 | grep -E 'whole' | tr '\n' ' '
                echo
            done
        done
        for f in v3_mobilenet_v3_small v4_resnet_tiny v7_segmentation_tiny v9_swin_tiny; do
            d=tests/fixtures/$f
            ins=$(ls $d/case0_in*.npy | sort | tr '\n' ',' | sed 's/,$//')
            calls=()
            for i in $(seq 20); do calls+=(--call "$ins"); done
            for c in old planned new; do
                echo -n "$c $f: "
                env $(conf $c) ETVK_PROFILE_WHOLE=1 .gl/bin/etvk run $d/model.pte "${calls[@]}" \
                    --profile 2>&1 | grep -E 'whole' | head -2 | tr '\n' ' '
                echo
            done
        done
    done
    echo "== decode wall time"
    for f in e5_llama3_tiny_kvcache_fp32 e6_llama3_tiny_kvcache_8da4w; do
        for c in old new old new; do
            echo -n "$c $f: "
            env $(conf $c) .gl/bin/etvk generate tests/fixtures/$f/model.pte \
                --prompt-tokens 1,2,3,4 --max-new 40 2>&1 | grep -E '^decode' | tr '\n' ' '
            echo
        done
    done
} 2>&1 | tee "$OUT/s33-third.txt"
