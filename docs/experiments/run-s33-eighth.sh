#!/usr/bin/env bash
# Session 33, run 9: host time per execute phase after the record is kept between calls
# (slice_copy's SymInt start read on the GPU), and the decode wall time and whole-execute
# GPU time against this session's starting behaviour (`ETVK_VIEW_ALIAS=0 ETVK_BARRIERS=all
# ETVK_FUSE=0 ETVK_FENCE_SPIN_US=0`; the record-keeping has no switch), interleaved twice.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s33-eighth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s33-eighth.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
conf() {
    case $1 in
        old) echo "ETVK_VIEW_ALIAS=0 ETVK_BARRIERS=all ETVK_FUSE=0 ETVK_FENCE_SPIN_US=0" ;;
        new) echo "ETVK_X=1" ;;
    esac
}
{
    for round in 1 2; do
        for f in e5_llama3_tiny_kvcache_fp32 e6_llama3_tiny_kvcache_8da4w \
            e8_qwen_style_tiny_kvcache_8da4w e11_llama31_tiny_kvcache_4w_mqa; do
            for c in old new; do
                echo -n "$c $f: "
                env $(conf $c) ETVK_HOST_TIMING=1 .gl/bin/etvk generate tests/fixtures/$f/model.pte \
                    --prompt-tokens 1,2,3,4 --max-new 40 2>&1 | grep -E '^decode|host timing' | tr '\n' ' '
                echo
            done
        done
    done
    for f in e6_llama3_tiny_kvcache_8da4w e11_llama31_tiny_kvcache_4w_mqa; do
        for c in old new; do
            echo -n "gpu $c $f: "
            env $(conf $c) ETVK_PROFILE_WHOLE=1 .gl/bin/etvk generate tests/fixtures/$f/model.pte \
                --prompt-tokens 1,2,3,4 --max-new 40 --profile 2>&1 | grep -E 'whole' | tr '\n' ' '
            echo
        done
    done
    echo "== every fixture, one etvk check process"
    fx=()
    for d in tests/fixtures/*/; do [ -f "$d/io.json" ] && fx+=("$d"); done
    .gl/bin/etvk check "${fx[@]}" 2>&1 | grep -vE ' PASS$' || true
} 2>&1 | tee "$OUT/s33-eighth.txt"
