#!/usr/bin/env bash
# Session 29, run 2 (HEAD 45db025): torchvision mobilenet_v2 at 224 x 224 (random weights,
# the program of session 28's timing; `.gl/models/`, not in the repository: 14 MB) with the
# pointwise convolutions on the tiled matmul, 20 calls with the per-op profile (session 28:
# 1.65 ms of GPU time per forward with conv_split); the 8da4w linear at K = 28672 after the
# fix of 91cf866 (its first timing in run 1 had an unwritten x); aten.linear at M = 8 with
# the vec4 GEMV (run 1: 108.5 us at 4096^2); int8-weight linears (`linear_q8`, 45db025)
# beside the fp32 ones; the 64 / 128 tiles (ETVK_LINEAR_TILE, commit after 45db025) at M >= 512.
# Here:   scripts/device-bench.sh prepare && rm -f .gl/bin/q4_linear-* && mkdir -p
#         .gl/models && cp <mobilenet_v2_224.pte, x224.npy> .gl/models/ &&
#         bash docs/experiments/run-s29-second.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s29-second.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
{
    .gl/bin/etvk bench read --ceiling-mib 1024 2>&1 | grep -E 'ceiling' || true
    calls=()
    for _ in $(seq 20); do calls+=(--call .gl/models/x224.npy); done
    # Warm-up, then the timed one.
    .gl/bin/etvk run .gl/models/mobilenet_v2_224.pte "${calls[@]}" >/dev/null 2>&1 || true
    TIMEFORMAT="wall %R s for 20 calls (with --profile)"
    time (.gl/bin/etvk run --profile .gl/models/mobilenet_v2_224.pte "${calls[@]}" 2>&1 |
        tail -45)
    TIMEFORMAT="wall %R s for 20 calls (no profile)"
    time (.gl/bin/etvk run .gl/models/mobilenet_v2_224.pte "${calls[@]}" >/dev/null 2>&1)
    for c in "1 8192 28672" "1 8192 8192"; do
        set -- $c
        echo -n "dq8ca M=$1 N=$2 K=$3: "
        exp_row .gl/bin/etvk bench linear_dq8ca_q4gsw --m "$1" --n "$2" --k "$3"
        echo -n "dq8ca M=$1 N=$2 K=$3: "
        exp_row .gl/bin/etvk bench linear_dq8ca_q4gsw --m "$1" --n "$2" --k "$3"
    done
    for c in "512 4096 4096" "2048 4096 4096" "512 8192 8192"; do
        set -- $c
        for t in 64 128; do
            echo -n "tile $t linear M=$1 N=$2 K=$3: "
            ETVK_LINEAR_TILE=$t exp_row .gl/bin/etvk bench linear --m "$1" --n "$2" --k "$3"
        done
    done
    for c in "8 4096 4096" "4 4096 4096" "1 4096 4096" "2048 4096 4096" "1 8192 8192" \
        "8 8192 8192" "512 8192 8192"; do
        set -- $c
        for op in linear linear_q8; do
            echo -n "$op M=$1 N=$2 K=$3: "
            exp_row .gl/bin/etvk bench $op --m "$1" --n "$2" --k "$3"
        done
    done
} 2>&1 | tee "$OUT/s29-second.txt"
