#!/usr/bin/env bash
# Session 39, on an H200 if one comes (runs 1-9 were on an H100): the attention's split keys
# (default, 16 keys, wave 528) against no split at 12 / 600 new tokens on the dim-4096 export
# (run-s38-sdpa.sh's header says how to make it), the M = 1 8192^2 GEMV row against a 2-GiB
# read ceiling three times (the floor at its edge), the cooperative_matrix2 forward at M =
# 512 against the default, and every fixture on the GPU.
# Here:   bash docs/experiments/run-s39h.sh prepare
# There:  (device tool, kind nvidia-h200, carry [".gl"])  bash .gl/run-s39h.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_carry_model /tmp/bigfx/llama_dim4096_ctx1024_8da4w
}
exp_begin "$0" "$@"
m=.gl/models/llama_dim4096_ctx1024_8da4w
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    for round in 1 2; do
        for n in 12 600; do
            for e in "ETVK_X=1" "ETVK_SDPA_SPLIT=0"; do
                echo -n "$n $e: "
                (export $e; exp_whole $m/model.pte $n)
            done
        done
    done
    echo -n "check: "
    timeout 60 .gl/bin/etvk check $m 2>&1 | tail -1
    echo "== M = 1 GEMV, 8192^2, 2-GiB ceiling"
    for round in 1 2 3; do
        timeout 90 .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 50 --ceiling-mib 2048 2>&1 |
            grep -E '^\| linear' || true
    done
    echo "== M = 512 forward: default / cm2 / cm2_f16"
    for shape in "8192 8192" "28672 8192"; do
        set -- $shape
        for e in on cm2 cm2_f16; do
            echo -n "$e N=$1 K=$2: "
            ETVK_Q4_MMA=$e exp_q4_row --m 512 --n $1 --k $2
        done
    done
    echo "== fixtures on this GPU"
    # shellcheck disable=SC2046
    timeout 300 .gl/bin/etvk check $(for d in tests/fixtures/*/; do [ -f "$d/io.json" ] && echo "$d"; done) 2>&1 | tail -1
} 2>&1 | tee "$OUT/s39h.txt"
