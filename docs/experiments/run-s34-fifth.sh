#!/usr/bin/env bash
# Session 34, run 7: where the DQ half GEMVs' extra 2.7-4.2 us over the weight-only kernel go
# (runs 5-6). Diagnostic variants of `_dq` / `_early_dq` / `_sliced_dq` by override (wrong
# results on purpose, only the time counts; `q4_linear_gemv_half-s34-dqdiag.diff`):
# d1 a fixed range (no min / max, no barrier), d2 no fake quant (x only scaled), d3 both,
# plain the weight-only kernel in the DQ node's place. `etvk bench linear_dq8ca_q4gsw --m 1`,
# interleaved twice, q4gsw beside.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s34-fifth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s34-fifth.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_patched docs/experiments/q4_linear_gemv_half-s34-dqdiag.diff
    rm -rf .gl/ovr_*
    for v in d1:1 d2:2 d3:3; do
        n=${v%%:*} d=${v##*:}
        exp_comp "$n" q4_linear_gemv_half_dq q4_linear_gemv_half.comp -O -DDQ=1 -DDIAG_DQ=$d
        exp_comp "$n" q4_linear_gemv_half_early_dq q4_linear_gemv_half.comp -O -DDQ=1 -DEARLY=1 -DDIAG_DQ=$d
        exp_comp "$n" q4_linear_gemv_half_sliced_dq q4_linear_gemv_half.comp -O -DDQ=1 -DSLICED=1 -DDIAG_DQ=$d
    done
    exp_comp plain q4_linear_gemv_half_dq q4_linear_gemv_half.comp -O
    exp_comp plain q4_linear_gemv_half_early_dq q4_linear_gemv_half.comp -O -DEARLY=1
    exp_comp plain q4_linear_gemv_half_sliced_dq q4_linear_gemv_half.comp -O -DSLICED=1
}
exp_begin "$0" "$@"
{
    .gl/bin/etvk bench read --ceiling-mib 1024 2>&1 | grep -E 'ceiling' || true
    for shape in "8192 8192" "4096 4096" "4096 14336"; do
        set -- $shape
        for round in 1 2; do
            for v in built d1 d2 d3 plain; do
                echo -n "$v dq8ca N=$1 K=$2: "
                if [ $v = built ]; then
                    exp_row .gl/bin/etvk bench linear_dq8ca_q4gsw --m 1 --n "$1" --k "$2"
                else
                    ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v exp_row .gl/bin/etvk bench linear_dq8ca_q4gsw \
                        --m 1 --n "$1" --k "$2"
                fi
            done
        done
        echo -n "q4gsw N=$1 K=$2: "
        exp_row .gl/bin/etvk bench linear_q4gsw --m 1 --n "$1" --k "$2"
    done
} 2>&1 | tee "$OUT/s34-fifth.txt"
