#!/usr/bin/env bash
# Session 39, first GPU run of two changes:
# 1. The KV-cache attention's split keys sized at run time from the step's key count (the
#    launch keeps SPLIT_WAVE-filling workgroups per row; those the keys leave empty return at
#    once), now on by default. Run 1 (H100, the split sized from the cache length): 600-token
#    decode 159.6 -> 100.7 us per whole execute, but the node 17.0 -> 22.4 us per call at 16
#    keys. Here: checks with the split on (default) and off, whole-execute GPU time at 12 and
#    600 new tokens each way, every fixture on the GPU.
# 2. The 4-bit forward through VK_NV_cooperative_matrix2 (`q4_linear_cm2`, ETVK_Q4_MMA=cm2 exact,
#    cm2_f16 fp16 weights) against the built f16 / int8 tensor-core kernels (ETVK_Q4_MMA=on) at
#    M = 64..2048 on the issue's shapes; the bench checks each against the CPU reference.
# Here:   bash docs/experiments/run-s39.sh prepare   (needs /tmp/bigfx/llama_dim4096_ctx1024_8da4w,
#         see run-s38-sdpa.sh's header)
# There:  (device tool, carry [".gl"])  bash .gl/run-s39.sh
# (Run with the switch then called ETVK_Q4_CM2 = 1 / f16 / 0; now ETVK_Q4_MMA = cm2 / cm2_f16 /
# on, as here.)
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
    .gl/bin/etvk devices 2>&1 | grep -E '^\*|api_version|cooperative' || true
    echo "== attention: checks, split on (default) / off"
    for e in "ETVK_X=1" "ETVK_SDPA_SPLIT=0"; do
        echo -n "$e: "
        env $e timeout 120 .gl/bin/etvk check $m 2>&1 | tail -1
    done
    echo "== GPU time per whole execute, 12 and 600 new tokens, split on / off (twice)"
    for round in 1 2; do
        for n in 12 600; do
            for e in "ETVK_X=1" "ETVK_SDPA_SPLIT=0"; do
                echo -n "$n $e: "
                (export $e; exp_whole $m/model.pte $n)
            done
        done
    done
    echo "== fixtures on this GPU (etvk check, defaults)"
    # shellcheck disable=SC2046
    timeout 300 .gl/bin/etvk check $(for d in tests/fixtures/*/; do [ -f "$d/io.json" ] && echo "$d"; done) 2>&1 | tail -2
    echo "== q4 forward through cooperative_matrix2"
    for shape in "8192 8192" "28672 8192" "8192 28672"; do
        set -- $shape
        for mm in 512 2048 128 64; do
            for e in "ETVK_Q4_MMA=on" "ETVK_Q4_MMA=cm2" "ETVK_Q4_MMA=cm2_f16"; do
                echo -n "$e: "
                env $e timeout 60 .gl/bin/etvk bench linear_q4gsw --m $mm --n $1 --k $2 --iters 10 --ceiling-mib 512 2>&1 |
                    grep -E 'check|^\| linear|rror' | sed 's/.*check/check/' | tr '\n' ' ' || true
                echo
            done
        done
    done
} 2>&1 | tee "$OUT/s39.txt"
