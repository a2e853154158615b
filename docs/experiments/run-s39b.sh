#!/usr/bin/env bash
# Session 39, second run: where the VK_NV_cooperative_matrix2 forward (`q4_linear_cm2`, exact
# codes, two MMAs and a scaling per 32-column step) loses its time. Run 2 (H100): 38.7-39.1
# TFLOP/s at M = 512 / 2048 against 77-79 for the coopmat1 codes kernel; its fp16-weight
# form (one MMA, the scale in the decode) 28-32. Variants of the shader's experiment switches
# (q4_linear_cm2.comp's header), swapped in by ETVK_SPIRV_OVERRIDE_DIR, tiles other than
# 128 x 128 by ETVK_Q4_CM2_TILE. The wrong-number variants (noepi, nodec, one) fail the
# bench's check by design; their times are what counts.
# Here:   bash docs/experiments/run-s39b.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s39b.sh
# (Run with the switch then called ETVK_Q4_CM2 = 1 / f16 / 0; now ETVK_Q4_MMA = cm2 / cm2_f16 /
# on, as here.)
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
VARIANTS=(
    "base -"
    "noclamp NOCLAMP=1"
    "noepi NOEPI=1"
    "nodec NODEC=1,NOEPI=1"
    "one NODEC=1,NOEPI=1,ONEMMA=1"
    "prefetch PREFETCH=1"
    "prefetch_noclamp PREFETCH=1,NOCLAMP=1"
    "bn64 BN=64"
    "bm64 BM=64"
    "t64 BM=64,BN=64"
    "bn64_noclamp BN=64,NOCLAMP=1"
)
exp_prepare() {
    exp_carry_bins
    local v name defs args
    for v in "${VARIANTS[@]}"; do
        read -r name defs <<<"$v"
        args=(-DMODE=2)
        [ "$defs" = - ] || for d in ${defs//,/ }; do args+=("-D$d"); done
        mkdir -p .gl/ovr_"$name"
        glslc -E "${args[@]}" -I shaders shaders/q4_linear_cm2.comp |
            tools/glsl2spv/target/release/glsl2spv .gl/ovr_"$name"/q4_linear_cm2.spv
    done
}
exp_begin "$0" "$@"
tile_of() {
    case $1 in
        bn64*) echo 64x128 ;;
        bm64) echo 128x64 ;;
        t64) echo 64x64 ;;
        *) echo 128x128 ;;
    esac
}
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    for shape in "512 8192 8192" "2048 28672 8192"; do
        set -- $shape
        echo "== M = $1, N x K = $2 x $3"
        echo -n "built (ETVK_Q4_MMA=on): "
        ETVK_Q4_MMA=on exp_q4_row --m $1 --n $2 --k $3
        for v in "${VARIANTS[@]}"; do
            read -r name _ <<<"$v"
            echo -n "$name: "
            ETVK_Q4_MMA=cm2 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$name ETVK_Q4_CM2_TILE=$(tile_of "$name") \
                exp_q4_row --m $1 --n $2 --k $3
        done
    done
} 2>&1 | tee "$OUT/s39b.txt"
