#!/usr/bin/env bash
# Session 33, run 5: every fixture through one `etvk check` process (a bare Vulkan instance
# kept for the process: run 4's check still failed at instance creation), then on an H200
# (if lent) the issue's table shapes at M = 1 / 8 and the new FMA M = 4 default, and the
# decode GPU time before / after this session.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s33-fourth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s33-fourth.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
{
    .gl/bin/etvk bench read --ceiling-mib 1024 2>&1 | grep -E 'ceiling' || true
    echo "== every fixture, one etvk check process"
    fx=()
    for d in tests/fixtures/*/; do [ -f "$d/io.json" ] && fx+=("$d"); done
    .gl/bin/etvk check "${fx[@]}" 2>&1 | grep -vE ' PASS$' || true
    for f in e5_llama3_tiny_kvcache_fp32 e6_llama3_tiny_kvcache_8da4w; do
        for c in old new; do
            echo -n "$c $f: "
            if [ $c = old ]; then set -- ETVK_VIEW_ALIAS=0 ETVK_BARRIERS=all; else set -- ETVK_X=1; fi
            env "$@" ETVK_PROFILE_WHOLE=1 .gl/bin/etvk generate tests/fixtures/$f/model.pte \
                --prompt-tokens 1,2,3,4 --max-new 40 --profile 2>&1 | grep -E 'whole' | tr '\n' ' '
            echo
        done
    done
    for c in "1 8192 8192" "1 28672 8192" "1 8192 28672" "8 8192 8192" "4 4096 4096"; do
        set -- $c
        echo -n "q4gsw M=$1 N=$2 K=$3: "
        exp_row .gl/bin/etvk bench linear_q4gsw --m $1 --n "$2" --k "$3"
    done
} 2>&1 | tee "$OUT/s33-fourth.txt"
