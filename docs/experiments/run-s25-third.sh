#!/usr/bin/env bash
# Session 25, run 3 (diagnostic; results wrong on purpose): what the int8 forward's limb
# node and split-K reduce node cost the whole op. Empty kernels (`void main() {}`) replace
# q4_mma_limbs, q4_linear_reduce or both by override, with ETVK_SELF_CHECKS=0 so that the
# int8 self-check does not swap the kernels out; the bench's check then reads MISMATCH.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s25-third.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s25-third.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    empty=$(mktemp -d)
    printf '#version 450\n#include "common.glsl"\nvoid main() {}\n' > "$empty/empty.comp"
    rm -rf .gl/ovr_nolimbs .gl/ovr_noreduce .gl/ovr_neither
    for v in nolimbs neither; do
        mkdir -p ".gl/ovr_$v"
        glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders -O \
            -o ".gl/ovr_$v/q4_mma_limbs.spv" "$empty/empty.comp"
    done
    for v in noreduce neither; do
        mkdir -p ".gl/ovr_$v"
        glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders -O \
            -o ".gl/ovr_$v/q4_linear_reduce.spv" "$empty/empty.comp"
    done
    ls .gl/ovr_nolimbs .gl/ovr_noreduce .gl/ovr_neither
}
exp_begin "$0" "$@"
{
    for c in "8 8192 8192" "8 28672 8192" "8 8192 28672" "32 8192 8192" "32 28672 8192"; do
        set -- $c
        for v in built nolimbs noreduce neither built nolimbs noreduce neither; do
            echo -n "$v M=$1 N=$2 K=$3: "
            ETVK_SELF_CHECKS=0 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v \
                exp_row .gl/bin/etvk bench linear_q4gsw --m "$1" --n "$2" --k "$3"
        done
    done
} 2>&1 | tee "$OUT/s25-third.txt"
