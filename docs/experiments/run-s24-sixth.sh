#!/usr/bin/env bash
# Session 24, run 8: small-M kernels that were built with glslc -O compiled without it (the
# manifest's opt=0), by override: the half GEMVs, the persistent and pre-pass int8 GEMVs,
# the int8 tensor-core forward (f1 / f2 / f4), the staged backward (m4 / m8) and the M = 2
# wide backward. (Since commit 326e631 the manifest builds f1 and staged m8 so: run against
# that binary, those rows compare a build with itself.)
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s24-sixth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s24-sixth.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    rm -rf .gl/ovr_o0
    exp_comp o0 q4_linear_gemv_half q4_linear_gemv_half.comp
    exp_comp o0 q4_linear_gemv_half_sliced q4_linear_gemv_half.comp -DSLICED=1
    exp_comp o0 q4_linear_gemv_wide_dp4_persist q4_linear_gemv_wide.comp -DDP4=1 -DPERSIST=1 -DRW=8
    exp_comp o0 q4_linear_gemv_wide_m1_dp4_pre q4_linear_gemv_wide.comp -DDP4=1 -DPRE=1
    exp_comp o0 q4_linear_mma_f1 q4_linear_mma.comp -DMF=1 -DSTEP=4
    exp_comp o0 q4_linear_mma_f2 q4_linear_mma.comp -DMF=2 -DSTEP=4
    exp_comp o0 q4_linear_mma_f4 q4_linear_mma.comp -DMF=4 -DSTEP=2
    exp_comp o0 q4_linear_bwd_staged_m4 q4_linear_bwd_staged.comp -DMT=4
    exp_comp o0 q4_linear_bwd_staged_m8 q4_linear_bwd_staged.comp -DMT=8
    for cw in 8 16 32; do
        exp_comp o0 q4_linear_bwd_wide_m2_c$cw q4_linear_bwd_wide.comp -DMT=2 -DCW=$cw
    done
}
exp_begin "$0" "$@"
b() { # op m n k: built and o0 interleaved twice
    for v in built o0 built o0; do
        echo -n "$v $1 M=$2 N=$3 K=$4: "
        ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v exp_row .gl/bin/etvk bench "$1" --m "$2" --n "$3" --k "$4"
    done
}
{
    echo "== q4_linear tests, o0"; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_o0 q4_tests
    b linear_q4gsw 1 8192 8192
    b linear_q4gsw 1 28672 8192
    b linear_q4gsw 1 8192 28672
    b linear_qcs4w 1 8192 8192
    b linear_q4gsw 4 8192 8192
    b linear_q4gsw 4 8192 28672
    b linear_q4gsw 8 8192 8192
    b linear_q4gsw 8 28672 8192
    b linear_q4gsw 32 8192 28672
    b linear_q4gsw_backward 8 8192 8192
    b linear_q4gsw_backward 8 8192 28672
    b linear_q4gsw_backward 2 8192 8192
} 2>&1 | tee "$OUT/s24-sixth.txt"
