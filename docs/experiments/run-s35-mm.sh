#!/usr/bin/env bash
# Session 35 (prepared; no device after run 1): the 8da4w linears' M = 1 DQ GEMVs reading
# the row range the op before wrote (`_dq_mm`, ops/quantize.rs `plan_row_minmax`) against
# the DQ forms that reduce it themselves (`ETVK_ROW_RANGE=0`), x written by an untimed
# RMSNorm or gated SiLU (`--x-from norm|silu`), interleaved twice, with those producers'
# node times (`ETVK_BENCH_PROFILE=1`: the norm / `silu_mul_rows_mm` against the elementwise
# `silu_mul` that runs without the range); the RMSNorm's node time at 64 invocations per row
# (`ETVK_NORM_LANES=64`, the old width) against the new default; the 8da4w tiny Llamas'
# whole-execute GPU time with session 35's graph changes and without (`reduce`: no ranges,
# the old norm width, fp16 outputs converted by a node: `ETVK_Q4_F16_OUT=0`); then the
# quantize / llama / unary / q4_linear op families on this GPU.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s35-mm.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s35-mm.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_test_binary ops
}
exp_begin "$0" "$@"
# One profiled bench on one line: the producer's and the linear's node times, the table row.
# Usage: prow "ENV=VALUE ..." ETVK_BENCH_COMMAND...
prow() {
    local e=$1
    shift
    # shellcheck disable=SC2086
    env $e ETVK_BENCH_PROFILE=1 "$@" --iters 20 --ceiling-mib 512 2>&1 |
        grep -E 'node (et_vk.rms_norm|aten.mul|aten.clone|et_vk.linear)|^\| linear|MISMATCH|rror' |
        sed 's/^ *//' | tr '\n' ' ' || true
    echo
}
# The M = 1 DQ GEMV with x from PRODUCER (norm or silu), without the row range and with it,
# interleaved twice, per "N K" shape. Usage: range_ab PRODUCER SHAPE...
range_ab() {
    local from=$1 v e
    shift
    for shape in "$@"; do
        set -- $shape
        for v in reduce range reduce range; do
            echo -n "$v $from N=$1 K=$2: "
            e=""
            [ $v = reduce ] && e="ETVK_ROW_RANGE=0"
            prow "$e" .gl/bin/etvk bench linear_dq8ca_q4gsw --m 1 --n "$1" --k "$2" --x-from "$from"
        done
    done
}
{
    nvidia-smi --query-gpu=name --format=csv,noheader || true
    .gl/bin/etvk bench read --ceiling-mib 1024 2>&1 | grep -E 'ceiling' || true
    echo "== x from an RMSNorm: reduce (ETVK_ROW_RANGE=0) against range"
    range_ab norm "8192 8192" "4096 4096" "1024 4096" "14336 4096" "2048 2048" "28672 8192" "4096 14336"
    echo "== x from a gated SiLU (w2 shapes): reduce (elementwise silu_mul) against range (by rows)"
    range_ab silu "4096 14336" "2048 8192" "4096 11008" "8192 28672" "1024 4096"
    echo "== the RMSNorm's node time: lanes 64 (old) against the default, M = 1 and 32"
    for k in 2048 4096 8192; do
        for m in 1 32; do
            for l in 64 default 64 default; do
                echo -n "norm lanes=$l M=$m N=$k: "
                e=""
                [ $l = 64 ] && e="ETVK_NORM_LANES=64"
                prow "$e" .gl/bin/etvk bench linear_dq8ca_q4gsw --m $m --n 1024 --k $k --x-from norm
            done
        done
    done
    echo "== the gated SiLU at M = 32 (by rows against elementwise)"
    for k in 8192 14336; do
        for v in reduce range; do
            echo -n "$v silu M=32 K=$k: "
            e=""
            [ $v = reduce ] && e="ETVK_ROW_RANGE=0"
            prow "$e" .gl/bin/etvk bench linear_dq8ca_q4gsw --m 32 --n 1024 --k $k --x-from silu
        done
    done
    echo "== tiny Llamas, whole executes"
    for round in 1 2; do
        for f in e6_llama3_tiny_kvcache_8da4w e7_llama3_tiny_kvcache_8da4w_fp16_emb4 \
            e8_qwen_style_tiny_kvcache_8da4w e9_llama3_tiny_kvcache_8da4w_emb8; do
            for v in reduce range; do
                echo -n "$v $f: "
                e=""
                [ $v = reduce ] && e="ETVK_ROW_RANGE=0 ETVK_NORM_LANES=64 ETVK_Q4_F16_OUT=0"
                env $e ETVK_PROFILE_WHOLE=1 .gl/bin/etvk generate tests/fixtures/$f/model.pte \
                    --prompt-tokens 1,2,3,4 --max-new 40 --profile 2>&1 | grep -E 'whole|^decode' | tr '\n' ' '
                echo
            done
        done
    done
    echo "== op families on this GPU"
    "$(ls .gl/bin/ops-* | head -1)" quantize norm_writes act_quant llama unary q4_linear --test-threads 1 2>&1 |
        grep -E '^test |test result|FAIL' | head -40
} 2>&1 | tee "$OUT/s35-mm.txt"
