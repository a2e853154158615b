#!/usr/bin/env bash
# Session 24, run 7: the wide backward's one row body as a macro (ADD_ROW, built in commit
# d8b014a; run 6's function form slowed the PREFETCH = 1 variants). The m1 / m2 / f16_m1
# SPIR-V is byte-identical to 865a0df's, so only the touch variant
# q4_linear_bwd_wide_f16t_m1_c{8,16,32} is overridden; the H200's backward tests first.
# Here:   scripts/device-bench.sh prepare at 865a0df, then at d8b014a:
#         bash docs/experiments/run-s24-fifth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s24-fifth.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    rm -rf .gl/ovr_mac
    for cw in 8 16 32; do
        exp_comp mac q4_linear_bwd_wide_f16t_m1_c$cw q4_linear_bwd_wide.comp -DMT=1 -DUR=2 \
            -DPREFETCH=2 -DDEC=1 -DNPF=64 -DCW=$cw
    done
}
exp_begin "$0" "$@"
{
    echo "== q4_linear backward tests, macro"; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_mac q4_tests backward
    ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_mac q4_tests wide
    for sk in "8192 8192" "28672 8192" "8192 28672" "4096 4096" "2048 8192" "8192 2048"; do
        set -- $sk
        for v in built mac built mac; do
            echo -n "$v f16t M=1 N=$1 K=$2: "
            ETVK_Q4_BWD=wide_f16t ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v exp_row .gl/bin/etvk bench linear_q4gsw_backward --m 1 --n $1 --k $2
        done
    done
} 2>&1 | tee "$OUT/s24-fifth.txt"
