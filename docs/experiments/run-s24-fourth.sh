#!/usr/bin/env bash
# Session 24, run 6: the wide backward with one row body as a function (add_row for every
# MT and PREFETCH form, an array of coefficients; q4_linear_bwd_wide-s24-rowfn.diff, applies
# to 865a0df; not kept: the macro form of run 7 was built), by override of all twelve
# q4_linear_bwd_wide_{m1,m2,f16_m1,f16t_m1}_c{8,16,32} variants (compiled as the manifest
# does: -O only for m2); the H200's backward tests with it first. M = 1 with each decode
# forced (ETVK_Q4_BWD = wide_magic / wide_f16 / wide_f16t) and M = 2, interleaved twice.
# Here:   scripts/device-bench.sh prepare at 865a0df, then bash docs/experiments/run-s24-fourth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s24-fourth.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_patched docs/experiments/q4_linear_bwd_wide-s24-rowfn.diff 865a0df
    rm -rf .gl/ovr_mw
    for v in "m1::-DMT=1 -DUR=2 -DPREFETCH=1" "m2:-O:-DMT=2" "f16_m1::-DMT=1 -DUR=2 -DPREFETCH=1 -DDEC=1" \
             "f16t_m1::-DMT=1 -DUR=2 -DPREFETCH=2 -DDEC=1 -DNPF=64"; do
        IFS=: read -r n o f <<<"$v"
        for cw in 8 16 32; do
            # shellcheck disable=SC2086
            exp_comp mw "q4_linear_bwd_wide_${n}_c$cw" q4_linear_bwd_wide.comp $o $f -DCW=$cw
        done
    done
}
exp_begin "$0" "$@"
{
    echo "== q4_linear backward tests, merged"; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_mw q4_tests backward
    ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_mw q4_tests wide
    for sk in "8192 8192" "28672 8192" "8192 28672"; do
        set -- $sk
        for dec in wide_magic wide_f16 wide_f16t; do
            for v in built mw built mw; do
                echo -n "$v $dec M=1 N=$1 K=$2: "
                ETVK_Q4_BWD=$dec ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v exp_row .gl/bin/etvk bench linear_q4gsw_backward --m 1 --n $1 --k $2
            done
        done
    done
    for sk in "8192 8192" "28672 8192" "8192 28672" "4096 4096"; do
        set -- $sk
        for v in built mw built mw; do
            echo -n "$v M=2 N=$1 K=$2: "
            ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v exp_row .gl/bin/etvk bench linear_q4gsw_backward --m 2 --n $1 --k $2
        done
    done
    for v in built mw built mw; do
        echo -n "$v M=1 4096^2: "
        ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v exp_row .gl/bin/etvk bench linear_q4gsw_backward --m 1 --n 4096 --k 4096
    done
} 2>&1 | tee "$OUT/s24-fourth.txt"
