#!/usr/bin/env bash
# Session 25, run 2: the limb pre-passes (q4_mma_limbs, q4_act_limbs) with eight invocations
# per chunk (q4_limbs_lanes.glsl) against 97e7cb6's binary (one invocation per chunk), whole
# ops timed, interleaved twice; the H200's q4_linear tests first, then q4_linear_mma_f2 with
# and without glslc -O (run 1 timed it on the reverted in-kernel sum), per-node profiles and
# the M = 1 GEMV last.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s25-second.sh prepare
#         (prepare builds 97e7cb6's etvk in a worktree)
# There:  (device tool, carry [".gl"])  bash .gl/run-s25-second.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_old_binary 97e7cb6
    rm -rf .gl/ovr_o0c
    exp_comp o0c q4_linear_mma_f2 q4_linear_mma.comp -DMF=2 -DSTEP=4
}
exp_begin "$0" "$@"
{
    echo "== q4_linear tests"; q4_tests
    for c in "linear_q4gsw 8 8192 8192" "linear_q4gsw 8 28672 8192" "linear_q4gsw 8 8192 28672" \
             "linear_q4gsw 16 8192 8192" "linear_q4gsw 16 28672 8192" \
             "linear_q4gsw 32 8192 8192" "linear_q4gsw 32 28672 8192" "linear_q4gsw 32 8192 28672" \
             "linear_q4gsw 64 28672 8192" "linear_q4gsw 2 8192 28672" "linear_q4gsw 4 8192 28672" \
             "linear_qcs4w 8 8192 8192"; do
        exp_ab $c
    done
    for c in "16 28672 8192" "16 8192 8192"; do
        set -- $c
        for v in built o0c built o0c; do
            echo -n "$v M=$1 N=$2 K=$3: "
            ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v exp_row .gl/bin/etvk bench linear_q4gsw --m "$1" --n "$2" --k "$3"
        done
    done
    for c in "8 8192 8192" "4 8192 28672"; do
        set -- $c
        for v in bin_old bin; do
            echo -n "profile $v M=$1 N=$2 K=$3: "
            ETVK_BENCH_PROFILE=1 ".gl/$v/etvk" bench linear_q4gsw --m "$1" --n "$2" --k "$3" \
                --iters 20 --ceiling-mib 64 2>&1 | grep -E "limbs" | tail -3 | tr '\n' ' '
            echo
        done
    done
    for v in bin bin; do
        echo -n "$v M=1 8192^2: "; exp_row ".gl/$v/etvk" bench linear_q4gsw --m 1 --n 8192 --k 8192
    done
} 2>&1 | tee "$OUT/s25-second.txt"
