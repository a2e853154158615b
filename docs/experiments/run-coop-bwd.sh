#!/usr/bin/env bash
# The cooperative-matrix backward experiment on the H200, in one device call.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-coop-bwd.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-coop-bwd.sh
set -euo pipefail
# The repository root: two up from docs/experiments, one up from the .gl copy.
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    mkdir -p .gl/exp/coop
    # No -O: Debian's glslang 11.13 optimizer crashes on cooperative-matrix additions; the
    # passes below are the ones that do not.
    glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders \
        -o .gl/exp/coop/raw.spv docs/experiments/q4_linear_bwd_coop.comp
    spirv-opt --merge-return --inline-entry-points-exhaustive --eliminate-dead-functions \
        --private-to-local --scalar-replacement=100 --ssa-rewrite --loop-unroll --ccp \
        --eliminate-dead-code-aggressive --eliminate-dead-branches --cfg-cleanup \
        --copy-propagate-arrays --redundancy-elimination \
        .gl/exp/coop/raw.spv -o .gl/exp/coop/q4_linear_bwd_wide_m1_c8.spv
    spirv-val --target-env vulkan1.2 .gl/exp/coop/q4_linear_bwd_wide_m1_c8.spv
    rm .gl/exp/coop/raw.spv
    cp docs/experiments/run-coop-bwd.sh .gl/run-coop-bwd.sh
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
row() {
    $e bench linear_q4gsw_backward "$@" --iters 10 --ceiling-mib 256 2>&1 |
        grep -E '^\| linear|check|rror' | tr '\n' ' ' | sed 's/.*check/check/'
    echo
}
{
    # Smallest first: one 16-row step, one column block, one slice.
    for s in "16 256" "32 256" "16 4096" "128 4096" "1000 4096" "8192 8192" "28672 8192" "8192 28672"; do
        set -- $s
        echo -n "coop N=$1 K=$2: "
        ETVK_Q4_BWD=wide_c8 ETVK_SPIRV_OVERRIDE_DIR=$PWD/.gl/exp/coop row --m 1 --n $1 --k $2
    done
    # Its best launch: more workgroups than the CUDA-core kernel's (52-62 registers).
    for w in 528 660; do
        echo -n "coop N=8192 K=8192 at $w workgroups: "
        ETVK_Q4_BWD_WGS=$w ETVK_Q4_BWD=wide_c8 ETVK_SPIRV_OVERRIDE_DIR=$PWD/.gl/exp/coop row --m 1 --n 8192 --k 8192
    done
    for s in "8192 8192" "28672 8192" "8192 28672"; do
        set -- $s
        echo -n "default N=$1 K=$2: "
        row --m 1 --n $1 --k $2
    done
} 2>&1 | tee "$OUT/coop-bwd.txt"
