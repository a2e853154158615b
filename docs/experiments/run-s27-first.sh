#!/usr/bin/env bash
# Session 27, run 1 (prepared in session 27, which had no device): the half GEMV's start and
# block sums, two ways, against the built kernel at M = 1:
# - TOUCH = 1 / 3 (q4_linear_gemv_half-s27-touch.diff): one 4-byte load per 32-byte sector
#   of the first block's second batch (3: and of the next block's two batches), weights and
#   scales, before x is read, the loaded words folded into one register kept to the end, so
#   those bytes are on their way to the caches while x arrives and the limbs are made. The
#   loop is unchanged (session 26's EARLY held that batch in registers and its loop change
#   cost 0.5-2 us where workgroups walk several blocks).
# - PIPE3 (q4_linear_gemv_half-s27-pipe3.diff): two batch register sets, each reloaded for
#   the next block as soon as it is used, the second after the block's partials are stored
#   to shared memory: both of the next block's batches fly through the block sum, both of the
#   first block's before x. Session 19's PIPE2 issued the second before the partials were
#   stored and took 70 registers (one workgroup per SM, 18.1 us at 8192^2). p3: as written;
#   p3o0: without glslc -O; p3b: PIPE3 = 2, the address read from shared memory after the
#   barrier so the driver cannot hoist the loads. Registers decide: above 64, two 512-wide
#   workgroups no longer share an SM.
# - Diagnostics (wrong results, time only; 8192^2 and 28672 x 8192): q, session 25's
#   DIAG_QUADLOAD (the batch read as two 16-byte loads, as a batch-contiguous weight layout
#   would: 0.2-0.25 us then), and p3q, PIPE3 = 2 with it: do the two gains add? If so,
#   such a layout (every packed-weight kernel follows it) would be worth building.
# Registers first, then the variants interleaved twice.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s27-first.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s27-first.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    rm -rf .gl/ovr_t1 .gl/ovr_t2 .gl/ovr_t3 .gl/ovr_p3 .gl/ovr_p3o0 .gl/ovr_p3b .gl/ovr_q .gl/ovr_p3q
    exp_patched docs/experiments/q4_linear_gemv_half-s27-touch.diff
    for t in 1 3; do
        exp_comp "t$t" q4_linear_gemv_half q4_linear_gemv_half.comp -O -DTOUCH=$t
    done
    exp_patched docs/experiments/q4_linear_gemv_half-s27-pipe3.diff
    exp_comp p3 q4_linear_gemv_half q4_linear_gemv_half.comp -O -DPIPE3=1
    exp_comp p3 q4_linear_gemv_half_sliced q4_linear_gemv_half.comp -O -DPIPE3=1 -DSLICED=1
    exp_comp p3o0 q4_linear_gemv_half q4_linear_gemv_half.comp -DPIPE3=1
    exp_comp p3o0 q4_linear_gemv_half_sliced q4_linear_gemv_half.comp -DPIPE3=1 -DSLICED=1
    exp_comp p3b q4_linear_gemv_half q4_linear_gemv_half.comp -O -DPIPE3=2
    exp_comp p3b q4_linear_gemv_half_sliced q4_linear_gemv_half.comp -O -DPIPE3=2 -DSLICED=1
    exp_comp q q4_linear_gemv_half q4_linear_gemv_half.comp -O -DDIAG_QUADLOAD=1
    exp_comp p3q q4_linear_gemv_half q4_linear_gemv_half.comp -O -DPIPE3=2 -DDIAG_QUADLOAD=1
}
exp_begin "$0" "$@"
variants="built t1 t3 p3 p3o0 p3b"
{
    for v in $variants q p3q; do
        echo "== registers, $v: "
        for k in 8192 28672; do
            ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v .gl/bin/etvk bench linear_q4gsw \
                --m 1 --n 8192 --k $k --iters 2 --ceiling-mib 64 2>&1 | grep -i "gemv_half" |
                grep -i "register" | head -1 || true
        done
    done
    for c in "linear_q4gsw 8192 8192" "linear_q4gsw 28672 8192" "linear_q4gsw 8192 28672" \
             "linear_q4gsw 2112 8192" "linear_qcs4w 8192 8192"; do
        set -- $c
        for v in $variants $variants; do
            echo -n "$v $1 N=$2 K=$3: "
            ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v exp_row .gl/bin/etvk bench "$1" --m 1 --n "$2" --k "$3"
        done
    done
    for n in 8192 28672; do
        for v in built q p3b p3q built q p3b p3q; do
            echo -n "diag $v linear_q4gsw N=$n K=8192: "
            ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v exp_row .gl/bin/etvk bench linear_q4gsw --m 1 --n $n --k 8192
        done
    done
} 2>&1 | tee "$OUT/s27-first.txt"
