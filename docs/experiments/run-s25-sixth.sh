#!/usr/bin/env bash
# Session 25, run 6: the wide backward's final sum with 32 loads in flight per batch (SB
# slices: 32 / 16 / 8 at 1 / 2 / 4 columns per invocation; the last batch guarded) against
# batches of 8 and the rest one slice at a time (the kernel of 98d6d9a), by override, both
# compiled here (the first from q4_linear_bwd_wide-s25-sb32.diff), interleaved twice. Run 5
# put the small weights' loss in the slice count: 4096^2 (16 slices) and N = 8192, K = 2048
# (32) gained at one workgroup per SM, N = 2048, K = 8192 (8) did not.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s25-sixth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s25-sixth.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
wide_variants() {  # the manifest's wide backward variants into .gl/ovr_$1
    for c in 8 16 32; do
        exp_comp "$1" "q4_linear_bwd_wide_m1_c$c" q4_linear_bwd_wide.comp -DMT=1 -DUR=2 -DPREFETCH=1 -DCW=$c
        exp_comp "$1" "q4_linear_bwd_wide_f16_m1_c$c" q4_linear_bwd_wide.comp -DMT=1 -DUR=2 -DPREFETCH=1 -DDEC=1 -DCW=$c
        exp_comp "$1" "q4_linear_bwd_wide_f16t_m1_c$c" q4_linear_bwd_wide.comp -DMT=1 -DUR=2 -DPREFETCH=2 -DDEC=1 -DNPF=64 -DCW=$c
        exp_comp "$1" "q4_linear_bwd_wide_m2_c$c" q4_linear_bwd_wide.comp -O -DMT=2 -DCW=$c
    done
}
exp_prepare() {
    rm -rf .gl/ovr_sb8 .gl/ovr_sb32
    exp_patched docs/experiments/q4_linear_bwd_wide-s25-sb32.diff 98d6d9a
    wide_variants sb32
    EXP_SHADERS=$(mktemp -d)
    git archive 98d6d9a shaders | tar -x -C "$EXP_SHADERS" --strip-components=1
    wide_variants sb8
}
exp_begin "$0" "$@"
{
    for c in "1 4096 4096" "1 8192 2048" "1 2048 8192" "1 14336 4096" "1 4096 14336" \
             "1 8192 8192" "1 28672 8192" "1 8192 28672" "2 8192 8192" "2 8192 2048"; do
        set -- $c
        for v in sb8 sb32 sb8 sb32; do
            echo -n "$v M=$1 N=$2 K=$3: "
            ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v exp_row .gl/bin/etvk bench linear_q4gsw_backward --m "$1" --n "$2" --k "$3"
        done
    done
    echo -n "registers: "
    ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_sb32 .gl/bin/etvk bench linear_q4gsw_backward \
        --m 1 --n 4096 --k 4096 --iters 2 --ceiling-mib 64 2>&1 | grep -i "regist" | tr '\n' ' '
    echo
} 2>&1 | tee "$OUT/s25-sixth.txt"
