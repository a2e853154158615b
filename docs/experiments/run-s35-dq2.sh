#!/usr/bin/env bash
# Prepared in session 34 (no device time left), for the next GPU: the DQ half GEMVs with the
# quantized row as integers in two int8 limbs (`DQ2`, `q4_linear_gemv_half-s34-dq2.diff`):
# x's fake quant is d * scale with d = q - z an integer in [-255, 255], so two limbs hold d
# exactly (the built forms make three limbs of the fp32 product: 12 packed dot products per
# row and half chunk, here 8) and the scale multiplies each row sum once. Passes the bench's
# f64 check, the quantize op cases and the 8da4w fixtures on lavapipe by override. Built
# against DQ2 by override, interleaved twice, `linear_dq8ca_q4gsw --m 1`; registers first.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s35-dq2.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s35-dq2.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_patched docs/experiments/q4_linear_gemv_half-s34-dq2.diff
    rm -rf .gl/ovr_dq2
    exp_comp dq2 q4_linear_gemv_half_dq q4_linear_gemv_half.comp -O -DDQ=1 -DDQ2=1
    exp_comp dq2 q4_linear_gemv_half_early_dq q4_linear_gemv_half.comp -O -DDQ=1 -DEARLY=1 -DDQ2=1
    exp_comp dq2 q4_linear_gemv_half_sliced_dq q4_linear_gemv_half.comp -O -DDQ=1 -DSLICED=1 -DDQ2=1
}
exp_begin "$0" "$@"
{
    .gl/bin/etvk bench read --ceiling-mib 1024 2>&1 | grep -E 'ceiling' || true
    for v in built dq2; do
        o=""
        [ $v = dq2 ] && o=.gl/ovr_dq2
        ETVK_SPIRV_OVERRIDE_DIR=$o ETVK_PIPELINE_STATS=1 .gl/bin/etvk bench linear_dq8ca_q4gsw \
            --m 1 --n 8192 --k 8192 --iters 2 2>&1 | grep -E 'pipeline stats q4_linear_gemv_half' |
            sed "s/^/$v: /" | cut -c1-160 || true
    done
    for shape in "8192 8192" "28672 8192" "14336 4096" "4096 4096" "4096 14336" "8192 28672"; do
        set -- $shape
        for round in 1 2; do
            for v in built dq2; do
                echo -n "$v dq8ca N=$1 K=$2: "
                if [ $v = built ]; then
                    exp_row .gl/bin/etvk bench linear_dq8ca_q4gsw --m 1 --n "$1" --k "$2"
                else
                    ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_dq2 exp_row .gl/bin/etvk bench linear_dq8ca_q4gsw \
                        --m 1 --n "$1" --k "$2"
                fi
            done
        done
    done
} 2>&1 | tee "$OUT/s35-dq2.txt"
