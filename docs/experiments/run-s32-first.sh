#!/usr/bin/env bash
# Session 32, run 1: the FMA GEMV for M = 2..8 (`q4_linear_gemv_fma_m{2,4,8}`: one pass over
# the weights for every activation row, a lane per packed word, x in registers, subgroup
# butterfly sums) against the kernels it replaces (`ETVK_Q4_FMA=0`: the persistent int8 GEMV
# at M = 2..7, the int8 tensor-core forward at M = 8), interleaved twice; its registers; the
# q4_linear tests on the device; UR = 8 (two scale quads per batch) by override; then the two runs left from sessions 29 and 31 (the uvec4
# int8-weight GEMV, the fault record's cost).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s29-sixth.sh prepare &&
#         bash docs/experiments/run-s31-first.sh prepare && bash docs/experiments/run-s32-first.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s32-first.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    local mt
    for mt in 2 4 8; do
        exp_comp ur8 "q4_linear_gemv_fma_m$mt" q4_linear_gemv_fma.comp -O -DMT=$mt -DUR=8
    done
}
exp_begin "$0" "$@"
{
    .gl/bin/etvk bench read --ceiling-mib 1024 2>&1 | grep -E 'ceiling' || true
    # Warm-up (a cold machine's first bench ran slow once: session 10).
    .gl/bin/etvk bench linear_q4gsw --m 8 --n 8192 --k 8192 --iters 5 >/dev/null 2>&1 || true
    for c in "8192 8192" "28672 8192" "8192 28672" "4096 4096" "14336 4096"; do
        set -- $c
        for m in 2 4 8; do
            for v in old new old new; do
                echo -n "$v q4gsw M=$m N=$1 K=$2: "
                if [ $v = old ]; then
                    ETVK_Q4_FMA=0 exp_row .gl/bin/etvk bench linear_q4gsw --m $m --n "$1" --k "$2"
                else
                    exp_row .gl/bin/etvk bench linear_q4gsw --m $m --n "$1" --k "$2"
                fi
            done
        done
    done
    for m in 3 5 6; do
        for v in old new; do
            echo -n "$v q4gsw M=$m N=8192 K=8192: "
            if [ $v = old ]; then
                ETVK_Q4_FMA=0 exp_row .gl/bin/etvk bench linear_q4gsw --m $m --n 8192 --k 8192
            else
                exp_row .gl/bin/etvk bench linear_q4gsw --m $m --n 8192 --k 8192
            fi
        done
    done
    for op in linear_qcs4w linear_dq8ca_q4gsw; do
        for v in old new; do
            echo -n "$v $op M=8 N=28672 K=8192: "
            if [ $v = old ]; then
                ETVK_Q4_FMA=0 exp_row .gl/bin/etvk bench $op --m 8 --n 28672 --k 8192
            else
                exp_row .gl/bin/etvk bench $op --m 8 --n 28672 --k 8192
            fi
        done
    done
    echo "== UR = 8 (two scale quads per batch) by override"
    for c in "8192 8192" "28672 8192"; do
        set -- $c
        for m in 2 4 8; do
            echo -n "ur8 q4gsw M=$m N=$1 K=$2: "
            ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_ur8 exp_row .gl/bin/etvk bench linear_q4gsw --m $m --n "$1" --k "$2"
        done
    done
    echo "== registers"
    for m in 2 4 8; do
        ETVK_PIPELINE_STATS=1 .gl/bin/etvk bench linear_q4gsw --m $m --n 8192 --k 8192 --iters 2 \
            --ceiling-mib 64 2>&1 | grep -i "gemv_fma" | head -3 || true
    done
    echo "== profile M=8 8192^2"
    ETVK_BENCH_PROFILE=1 .gl/bin/etvk bench linear_q4gsw --m 8 --n 8192 --k 8192 --iters 5 \
        --ceiling-mib 64 2>&1 | grep -v "^read\|^copy" | tail -6 || true
} 2>&1 | tee "$OUT/s32-first.txt"
echo "== tests"
q4_tests forward 2>&1 | tee -a "$OUT/s32-first.txt" || true
timeout 120 bash .gl/run-s29-sixth.sh || true
timeout 200 bash .gl/run-s31-first.sh || true
