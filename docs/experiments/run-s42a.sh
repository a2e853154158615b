#!/usr/bin/env bash
# Session 42, first run: the 8da4w linear at M = 4 and 8 on rows the FMA GEMV takes (K <=
# 4096): the persistent int8 GEMV's DQ form with its choose node idle (built at M = 4;
# ETVK_DQ_FMA=8 at M = 8) against the FMA GEMV after the choose node (ETVK_DQ_FMA=1 at
# M = 4; built at M = 8), interleaved twice; then session 41's
# A/Bs again (run-s41g.sh's rows: it was prepared for an H200 and never ran), the M = 1
# DQ GEMVs' `_early` forms on multi-block launches (ETVK_Q4_GEMV=half_early), the half
# GEMV's block sums in four chains (override `sum4`), and the
# 8da4w op tests on the GPU. One binary (env switches), 2-GiB read ceilings.
# Outcome (run 1, an H100): journal, session 42 (the persistent DQ form kept at M = 4 and 8,
# now the default at both: ETVK_DQ_FMA=8 no longer exists, the M = 8 "fma" rows now need
# ETVK_DQ_FMA=1; the early forms and the four chains not kept).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s42a.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s42a.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_carry_tests
    # The half GEMV's stage-2 block sum in four chains wherever a row has >= 32 partials
    # (built: >= 65, the 1024-wide workgroups only): q4_linear_gemv_half-s42-sum4.diff
    # (applies to 8d83206's parent, 86dc69a) makes the threshold a define.
    exp_patched docs/experiments/q4_linear_gemv_half-s42-sum4.diff 86dc69a
    exp_comp sum4 q4_linear_gemv_half q4_linear_gemv_half.comp -O -DSUM4_MIN_SEGS=32u
    exp_comp sum4 q4_linear_gemv_half_early q4_linear_gemv_half.comp -O -DSUM4_MIN_SEGS=32u -DEARLY=1
    exp_comp sum4 q4_linear_gemv_half_sliced q4_linear_gemv_half.comp -O -DSUM4_MIN_SEGS=32u -DSLICED=1
}
exp_begin "$0" "$@"
{
    exp_header
    for round in 1 2; do
        for shape in "4096 4096" "14336 4096" "1024 4096" "2048 2048"; do
            read -r n k <<<"$shape"
            echo -n "r$round fma dq8ca M=4 N=$n K=$k: "
            ETVK_DQ_FMA=1 exp_row2g linear_dq8ca_q4gsw --m 4 --n "$n" --k "$k"
            echo -n "r$round new dq8ca M=4 N=$n K=$k: "
            exp_row2g linear_dq8ca_q4gsw --m 4 --n "$n" --k "$k"
            echo -n "r$round fma dq8ca M=8 N=$n K=$k: "
            exp_row2g linear_dq8ca_q4gsw --m 8 --n "$n" --k "$k"
            echo -n "r$round persist dq8ca M=8 N=$n K=$k: "
            ETVK_DQ_FMA=8 exp_row2g linear_dq8ca_q4gsw --m 8 --n "$n" --k "$k"
        done
    done
    # The half GEMV's block sums in four chains (`sum4`, by override) against the built one.
    for round in 1 2; do
        for shape in "8192 8192" "28672 8192" "8192 28672" "4096 4096"; do
            read -r n k <<<"$shape"
            echo -n "r$round built M=1 N=$n K=$k: "
            exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
            echo -n "r$round sum4 M=1 N=$n K=$k: "
            ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_sum4 exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
        done
        echo -n "r$round built qcs4w M=1 8192^2: "
        exp_row2g linear_qcs4w --m 1 --n 8192 --k 8192
        echo -n "r$round sum4 qcs4w M=1 8192^2: "
        ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_sum4 exp_row2g linear_qcs4w --m 1 --n 8192 --k 8192
    done
    # The M = 1 DQ GEMVs with the first block's second batch loaded before x (the `_early`
    # forms, built for one-block launches): does the longer DQ start (the row's min / max
    # over the workgroup, one barrier) pay for the loop's branch on multi-block launches?
    for round in 1 2; do
        for shape in "8192 8192" "28672 8192" "14336 4096" "8192 4096"; do
            read -r n k <<<"$shape"
            for src in copy norm; do
                echo -n "r$round late dq8ca M=1 N=$n K=$k x-from $src: "
                exp_row2g linear_dq8ca_q4gsw --m 1 --n "$n" --k "$k" --x-from $src
                echo -n "r$round early dq8ca M=1 N=$n K=$k x-from $src: "
                ETVK_Q4_GEMV=half_early exp_row2g linear_dq8ca_q4gsw --m 1 --n "$n" --k "$k" --x-from $src
            done
        done
    done
    echo -n "floor M=1 N=8192 K=8192: "
    exp_row2g linear_q4gsw --m 1 --n 8192 --k 8192
    for shape in "4096 14336" "8192 16384"; do
        read -r n k <<<"$shape"
        echo -n "old M=1 N=$n K=$k: "
        ETVK_Q4_HALF_MAX_CHUNKS=256 exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
        echo -n "new M=1 N=$n K=$k: "
        exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
    done
    echo -n "old M=4 N=8192 K=14336: "
    ETVK_Q4_PERSIST_MAX_CHUNKS=256 exp_row2g linear_q4gsw --m 4 --n 8192 --k 14336
    echo -n "new M=4 N=8192 K=14336: "
    exp_row2g linear_q4gsw --m 4 --n 8192 --k 14336
    for m in 2 7; do
        echo -n "old dq8ca M=$m N=8192 K=8192: "
        ETVK_DQ_PERSIST=0 exp_row2g linear_dq8ca_q4gsw --m $m --n 8192 --k 8192
        echo -n "new dq8ca M=$m N=8192 K=8192: "
        exp_row2g linear_dq8ca_q4gsw --m $m --n 8192 --k 8192
    done
    echo "== 8da4w op tests"
    exp_ops_tests quantize act_quant dq_linear norm_writes rms_norm_runs gated_silu_runs_inside
} 2>&1 | tee "$OUT/s42a.txt"
