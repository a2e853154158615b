#!/usr/bin/env bash
# Session 37, run 3: why the DQ GEMV with the RMSNorm inside (`_dq_norm`) streams slower than
# `_dq_mm` / `_dq` (run 2: +1.4-10 us, more on longer rows; a second wave if it lost the
# second workgroup per SM?): registers and statistics of the three forms (`ETVK_PIPELINE_STATS=1`)
# at 8192^2 and 2048^2; the op against run 2's form (scalar weight loads, an override) and
# the node; the tiny Llamas with and without the
# RoPE inside the attention (now the HF form too: e8); then the fixtures and op tests on the
# GPU (run 2's had no validation layer to open a device with). The binaries travel gzipped
# (the working tree and .gl must stay under 64 MiB; device-env.sh unpacks them there).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s37-second.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s37-second.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_test_binary ops
    exp_test_binary fixtures
    # Run 2's `_dq_norm` (16 guarded scalar loads of the norm's weights) as an override.
    EXP_SHADERS=$(mktemp -d)
    git archive 2435d3b shaders | tar -x -C "$EXP_SHADERS" --strip-components=1
    exp_comp scalar q4_linear_gemv_half_dq_norm q4_linear_gemv_half.comp -O -DDQ=1 -DNORM=1
    EXP_SHADERS=shaders
    rm -f .gl/bin/q4_linear-* .gl/bin/*.gz
    strip .gl/bin/*
    gzip -9 -f .gl/bin/*
}
exp_begin "$0" "$@"
{
    nvidia-smi --query-gpu=name --format=csv,noheader || true
    echo "== registers: the DQ GEMV forms (x from a norm: inside / _dq_mm; ETVK_ROW_RANGE=off: _dq)"
    for shape in "8192 8192" "2048 2048"; do
        set -- $shape
        for e in "ETVK_NORM_GEMV=all" "ETVK_NORM_GEMV=0" "ETVK_NORM_GEMV=0 ETVK_ROW_RANGE=off"; do
            echo "-- $e N=$1 K=$2"
            env $e ETVK_PIPELINE_STATS=1 ETVK_BENCH_PROFILE=1 .gl/bin/etvk bench linear_dq8ca_q4gsw \
                --m 1 --n "$1" --k "$2" --x-from norm --iters 20 --ceiling-mib 256 2>&1 |
                grep -iE 'q4_linear_gemv_half.*(regist|spill|stat)|^\| linear' | head -6 || true
        done
    done
    echo "== M = 1, x from a norm: node / inside (vec4 weights) / inside (run 2's scalar loads)"
    for shape in "8192 8192" "4096 4096" "14336 4096"; do
        set -- $shape
        for v in node vec4 scalar node vec4 scalar; do
            echo -n "$v N=$1 K=$2: "
            case $v in
                node) e="ETVK_NORM_GEMV=0" ;;
                vec4) e="ETVK_NORM_GEMV=all" ;;
                scalar) e="ETVK_NORM_GEMV=all ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_scalar" ;;
            esac
            env $e ETVK_BENCH_PROFILE=1 .gl/bin/etvk bench linear_dq8ca_q4gsw --m 1 --n "$1" --k "$2" \
                --x-from norm --iters 20 --ceiling-mib 256 2>&1 |
                grep -E '^\| linear|MISMATCH|rror' | tr '\n' ' ' || true
            echo
        done
    done
    echo "== tiny Llamas, GPU time per whole execute: RoPE node / inside"
    for round in 1 2; do
        for f in e8_qwen_style_tiny_kvcache_8da4w e6_llama3_tiny_kvcache_8da4w; do
            for v in node inside; do
                echo -n "$v $f: "
                e="ETVK_X=1"
                [ $v = node ] && e="ETVK_ROPE_SDPA=0"
                env $e ETVK_PROFILE_WHOLE=1 .gl/bin/etvk generate tests/fixtures/$f/model.pte \
                    --prompt-tokens 1,2,3,4 --max-new 40 --profile 2>&1 | grep -E 'whole|^generated' | tr '\n' ' '
                echo
            done
        done
    done
    echo "== fixtures and op families on this GPU"
    "$(ls .gl/bin/fixtures-* | head -1)" --test-threads 1 2>&1 | grep -E 'test result|FAIL|panicked' | head -20
    "$(ls .gl/bin/ops-* | head -1)" quantize unary gated dq_linear norm_writes rms_norm llama attention kv_cache --test-threads 1 2>&1 |
        grep -E '^test |test result|FAIL|panicked' | head -30
} 2>&1 | tee "$OUT/s37-second.txt"
