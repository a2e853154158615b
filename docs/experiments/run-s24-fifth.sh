#!/usr/bin/env bash
# Session 24, run 7: the wide backward's one row body as a macro (ADD_ROW; run 6's function
# form slowed the PREFETCH = 1 variants). The m1 / m2 / f16_m1 SPIR-V is byte-identical to the
# built one, so only the touch variant q4_linear_bwd_wide_f16t_m1_c{8,16,32} is overridden;
# the H200's backward tests with it first.
# Here:   scripts/device-bench.sh prepare at the commit before the change, then with the
#         changed shader in the tree: bash docs/experiments/run-s24-fifth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s24-fifth.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    rm -rf .gl/ovr_mac; mkdir -p .gl/ovr_mac
    for cw in 8 16 32; do
        glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders -DMT=1 -DUR=2 -DPREFETCH=2 \
            -DDEC=1 -DNPF=64 -DCW=$cw -o ".gl/ovr_mac/q4_linear_bwd_wide_f16t_m1_c$cw.spv" \
            shaders/q4_linear_bwd_wide.comp
    done
    cp docs/experiments/run-s24-fifth.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
row() { "$@" --iters 20 --ceiling-mib 1024 2>&1 |
        grep -E '^\| linear|kernels|MISMATCH|rror' | sed 's/.*kernels/kernels/' | tr '\n' ' ' || true; echo; }
{
    echo "== q4_linear backward tests, macro"; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_mac q4_tests backward
    ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_mac q4_tests wide
    for sk in "8192 8192" "28672 8192" "8192 28672" "4096 4096" "2048 8192" "8192 2048"; do
        set -- $sk
        for v in built mac built mac; do
            echo -n "$v f16t M=1 N=$1 K=$2: "
            ETVK_Q4_BWD=wide_f16t ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v row .gl/bin/etvk bench linear_q4gsw_backward --m 1 --n $1 --k $2
        done
    done
} 2>&1 | tee "$OUT/s24-fifth.txt"
