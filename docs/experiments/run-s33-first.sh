#!/usr/bin/env bash
# Session 33, run 2: planned barriers (exec/barriers.rs: dependent dispatches only, recorded
# level by level) against a barrier after every dispatch (`ETVK_BARRIERS=all`, the behaviour
# before), on the tiny Llama exports' decode (`etvk generate`, 28 decode calls each),
# interleaved three times; every fixture through `etvk check` on the GPU with the planned
# barriers (a race that lavapipe's in-order execution hides would show there); the FMA
# GEMV's new M = 4 default (two words per lane, K <= 4096) against `ETVK_Q4_FMA=0`.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s33-first.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s33-first.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
{
    .gl/bin/etvk bench read --ceiling-mib 1024 2>&1 | grep -E 'ceiling' || true
    echo "== fixtures on the GPU, planned barriers"
    fx=()
    for d in tests/fixtures/*/; do [ -f "$d/io.json" ] && fx+=("$d"); done
    .gl/bin/etvk check "${fx[@]}" 2>&1 | grep -vE ' PASS$' || true
    echo "== decode (ms per token)"
    for round in 1 2 3; do
        for f in e5_llama3_tiny_kvcache_fp32 e6_llama3_tiny_kvcache_8da4w \
            e7_llama3_tiny_kvcache_8da4w_fp16_emb4 e11_llama31_tiny_kvcache_4w_mqa; do
            for b in all planned; do
                echo -n "$b $f: "
                ETVK_BARRIERS=$b .gl/bin/etvk generate tests/fixtures/$f/model.pte \
                    --prompt-tokens 1,2,3,4 --max-new 40 2>&1 | grep -E '^(prefill|decode)' | tr '\n' ' '
                echo
            done
        done
    done
    echo "== FMA GEMV M = 4 default"
    for c in "4096 4096" "14336 4096" "2048 2048" "8192 8192"; do
        set -- $c
        for v in old new old new; do
            echo -n "$v q4gsw M=4 N=$1 K=$2: "
            if [ $v = old ]; then
                ETVK_Q4_FMA=0 exp_row .gl/bin/etvk bench linear_q4gsw --m 4 --n "$1" --k "$2"
            else
                exp_row .gl/bin/etvk bench linear_q4gsw --m 4 --n "$1" --k "$2"
            fi
        done
    done
} 2>&1 | tee "$OUT/s33-first.txt"
