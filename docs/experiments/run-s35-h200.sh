#!/usr/bin/env bash
# For the first H200 lent after session 34 (one call, under 600 s): the issue's table at the
# current commit (`device-bench.sh`, ~200 s), the FMA GEMV defaults against
# `ETVK_Q4_FMA=0` (`run-s34-first.sh` with SKIP_GRAPH=1, ~90 s), then the 8da4w linear at
# M = 1 beside the weight-only one on the shapes session 34 timed on an H100 (sliced DQ,
# subgroup min / max), and the tiny Llamas' whole-execute GPU time. The command checks the
# card first and runs nothing on another one.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s34-first.sh prepare &&
#         bash docs/experiments/run-s35-h200.sh prepare
# There:  (device tool, carry [".gl"], kind nvidia-h200)  bash .gl/run-s35-h200.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
card=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null || true)
case "$card" in
    *H200*) ;;
    *) echo "not an H200 ($card): nothing run" | tee "$OUT/s35-h200.txt"; exit 0 ;;
esac
timeout 330 bash .gl/device-bench.sh > /dev/null 2>&1 || true
SKIP_GRAPH=1 timeout 120 bash .gl/run-s34-first.sh > /dev/null 2>&1 || true
{
    echo "== $card"
    for shape in "8192 8192" "28672 8192" "8192 28672" "4096 14336" "14336 4096"; do
        set -- $shape
        echo -n "dq8ca N=$1 K=$2: "
        exp_row .gl/bin/etvk bench linear_dq8ca_q4gsw --m 1 --n "$1" --k "$2"
        echo -n "q4gsw N=$1 K=$2: "
        exp_row .gl/bin/etvk bench linear_q4gsw --m 1 --n "$1" --k "$2"
    done
    for f in e5_llama3_tiny_kvcache_fp32 e6_llama3_tiny_kvcache_8da4w e11_llama31_tiny_kvcache_4w_mqa; do
        echo -n "$f: "
        .gl/bin/etvk generate tests/fixtures/$f/model.pte --prompt-tokens 1,2,3,4 --max-new 40 \
            2>&1 | grep -E '^decode' | tr '\n' ' '
        ETVK_PROFILE_WHOLE=1 .gl/bin/etvk generate tests/fixtures/$f/model.pte \
            --prompt-tokens 1,2,3,4 --max-new 40 --profile 2>&1 | grep -E 'whole' | tr '\n' ' '
        echo
    done
} 2>&1 | tee "$OUT/s35-h200.txt"
