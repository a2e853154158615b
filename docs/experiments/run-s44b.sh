#!/usr/bin/env bash
# Session 44, second run: the register-operand int8 forward with TT row tiles per subgroup
# sharing each chunk's B fragments (docs/experiments/q4_linear_mma_reg_tt.comp, an override
# of q4_linear_mma_reg_f1; M = 8) against the tiles and run 1's touch variant. The launch
# is the 128-row one, so ETVK_Q4_MMA_WGS raises the split-K target TT-fold (264 * TT).
# Here:   rm -rf .gl/bin/* && scripts/device-bench.sh prepare && bash docs/experiments/run-s44b.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s44b.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    cargo build --release -p etvk-cli -p etvk-ffi
    exp_carry_bins
    exp_patched docs/experiments/q4_linear_mma_reg-s44-touch.diff
    exp_comp s44touch q4_linear_mma_reg_f1 q4_linear_mma_reg.comp -O -DMF=1
    EXP_SHADERS=shaders
    for tt in 1 2 4 8; do
        mkdir -p .gl/ovr_tt$tt
        glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders -O -DTT=$tt \
            -o .gl/ovr_tt$tt/q4_linear_mma_reg_f1.spv docs/experiments/q4_linear_mma_reg_tt.comp
    done
}
exp_begin "$0" "$@"
row() { EXP_ITERS=20 exp_line .gl/bin/etvk "$@"; }
{
    exp_header
    for shape in "8192 8192" "28672 8192" "8192 28672"; do
        read -r n k <<<"$shape"
        echo "== M = 8, N = $n, K = $k"
        echo -n "tiles: "; row linear_q4gsw --m 8 --n "$n" --k "$k"
        echo -n "touch: "; ETVK_Q4_MMA_REG=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_s44touch row linear_q4gsw --m 8 --n "$n" --k "$k"
        for tt in 1 2 4 8; do
            for w in $((264 * tt)) $((132 * tt)); do
                echo -n "tt$tt wgs $w: "
                ETVK_Q4_MMA_WGS=$w ETVK_Q4_MMA_REG=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_tt$tt row linear_q4gsw --m 8 --n "$n" --k "$k"
            done
        done
    done
    echo "== statistics"
    for tt in 1 2 4 8; do
        ETVK_PIPELINE_STATS=1 ETVK_Q4_MMA_REG=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_tt$tt .gl/bin/etvk bench linear_q4gsw \
            --m 8 --n 8192 --k 8192 --iters 2 --ceiling-mib 64 2>&1 | grep -E "stats q4_linear_mma_reg_f1|kernels" | sed "s/^/[tt$tt] /"
    done
    echo -n "profile tt4: "; ETVK_BENCH_PROFILE=1 ETVK_Q4_MMA_WGS=1056 ETVK_Q4_MMA_REG=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_tt4 bench_row linear_q4gsw --m 8 --n 8192 --k 8192
} 2>&1 | tee "$OUT/s44b.txt"
