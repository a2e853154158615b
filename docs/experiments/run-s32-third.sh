#!/usr/bin/env bash
# Session 32, run 3 (H200 wanted; runs 1-2 were on an H100): the FMA GEMV's default at M = 8
# on rows of K <= 4096 (select::FMA_GEMV_MAX_K_BESIDE_MMA) against the int8 tensor-core
# forward (`ETVK_Q4_FMA=0`), interleaved twice; where its time goes at M = 2 and 8 (forced
# by `ETVK_Q4_GEMV=fma`; diagnostics by override from q4_linear_gemv_fma-diag.diff, wrong
# results: DIAG_NO_REDUCE adds the rows' sums in the lane instead of the shuffle butterfly,
# DIAG_NO_WLOADS decodes synthetic words instead of loading the weights); the q4_linear tests.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s32-third.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s32-third.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    local mt v
    exp_patched docs/experiments/q4_linear_gemv_fma-diag.diff
    for mt in 2 8; do
        for v in "nored -DDIAG_NO_REDUCE=1" "noload -DDIAG_NO_WLOADS=1" \
            "neither -DDIAG_NO_REDUCE=1 -DDIAG_NO_WLOADS=1"; do
            set -- $v
            exp_comp "$1" "q4_linear_gemv_fma_m$mt" q4_linear_gemv_fma.comp -O -DMT=$mt "$2" ${3:-}
        done
    done
}
exp_begin "$0" "$@"
{
    .gl/bin/etvk bench read --ceiling-mib 1024 2>&1 | grep -E 'ceiling' || true
    .gl/bin/etvk bench linear_q4gsw --m 8 --n 8192 --k 8192 --iters 5 >/dev/null 2>&1 || true
    for c in "4096 4096" "14336 4096" "3072 3072" "8192 3072" "2048 2048" "8192 8192"; do
        set -- $c
        for v in old new old new; do
            echo -n "$v q4gsw M=8 N=$1 K=$2: "
            if [ $v = old ]; then
                ETVK_Q4_FMA=0 exp_row .gl/bin/etvk bench linear_q4gsw --m 8 --n "$1" --k "$2"
            else
                ETVK_Q4_GEMV=fma exp_row .gl/bin/etvk bench linear_q4gsw --m 8 --n "$1" --k "$2"
            fi
        done
    done
    echo "== where the time goes (8192^2, forced)"
    for m in 2 8; do
        for v in built nored noload neither; do
            echo -n "$v M=$m: "
            if [ $v = built ]; then
                ETVK_Q4_GEMV=fma exp_row .gl/bin/etvk bench linear_q4gsw --m $m --n 8192 --k 8192
            else
                ETVK_Q4_GEMV=fma ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v exp_row .gl/bin/etvk bench linear_q4gsw --m $m --n 8192 --k 8192
            fi
        done
    done
} 2>&1 | tee "$OUT/s32-third.txt"
echo "== tests"
q4_tests 2>&1 | tee -a "$OUT/s32-third.txt" || true
