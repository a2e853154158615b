#!/usr/bin/env bash
# Session 33, run 3: the GPU time of whole executes (`ETVK_PROFILE_WHOLE=1 ... --profile`: two
# timestamps per execute, the barriers an execute has without profiling) with planned
# barriers against a barrier after every dispatch (`ETVK_BARRIERS=all`), interleaved twice:
# the tiny Llama exports' 32 generate calls, and CNN / transformer fixtures' case 0 run 20
# times. Then every fixture through `etvk check` on the GPU, one process each (run 2's
# single `etvk check` of all of them stopped at an instance creation failure); the FMA GEMV's
# M = 4 / 8 defaults against `ETVK_Q4_FMA=0` (on an H200 if one is lent).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s33-second.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s33-second.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
{
    .gl/bin/etvk bench read --ceiling-mib 1024 2>&1 | grep -E 'ceiling' || true
    export ETVK_PROFILE_WHOLE=1
    for round in 1 2; do
        for f in e5_llama3_tiny_kvcache_fp32 e6_llama3_tiny_kvcache_8da4w \
            e7_llama3_tiny_kvcache_8da4w_fp16_emb4 e11_llama31_tiny_kvcache_4w_mqa; do
            for b in all planned; do
                echo -n "$b $f: "
                ETVK_BARRIERS=$b .gl/bin/etvk generate tests/fixtures/$f/model.pte \
                    --prompt-tokens 1,2,3,4 --max-new 40 --profile 2>&1 | grep -E 'whole' | tr '\n' ' '
                echo
            done
        done
        for f in v3_mobilenet_v3_small v4_resnet_tiny v7_segmentation_tiny h9_mobilenet_v2_q8ta \
            v9_swin_tiny; do
            d=tests/fixtures/$f
            ins=$(ls $d/case0_in*.npy | sort | tr '\n' ',' | sed 's/,$//')
            calls=()
            for i in $(seq 20); do calls+=(--call "$ins"); done
            for b in all planned; do
                echo -n "$b $f: "
                ETVK_BARRIERS=$b .gl/bin/etvk run $d/model.pte "${calls[@]}" --profile 2>&1 |
                    grep -E 'whole' | tr '\n' ' '
                echo
            done
        done
    done
    unset ETVK_PROFILE_WHOLE
    echo "== fixtures on the GPU, planned barriers, one process each"
    for d in tests/fixtures/*/; do
        [ -f "$d/io.json" ] || continue
        .gl/bin/etvk check "$d" 2>&1 | grep -vE ' PASS$' | tr '\n' ' ' || true
        echo
    done
    echo "== FMA GEMV defaults (M = 4 two words per lane at K <= 4096, M = 8 at K <= 4096) against ETVK_Q4_FMA=0"
    for c in "4 4096 4096" "4 14336 4096" "8 4096 4096" "8 14336 4096" "8 2048 2048"; do
        set -- $c
        for v in old new old new; do
            echo -n "$v q4gsw M=$1 N=$2 K=$3: "
            if [ $v = old ]; then
                ETVK_Q4_FMA=0 exp_row .gl/bin/etvk bench linear_q4gsw --m $1 --n "$2" --k "$3"
            else
                exp_row .gl/bin/etvk bench linear_q4gsw --m $1 --n "$2" --k "$3"
            fi
        done
    done
} 2>&1 | tee "$OUT/s33-second.txt"
