#!/usr/bin/env bash
# Session 40, sixth run: the portable tiled kernels (tensor cores off, ETVK_Q4_MMA=0) with
# the double-buffered step's A tile loaded as vec4s, one scale per packed word (groups of a
# multiple of 8, a shift for powers of two) and the codes decoded through 2^23's mantissa
# instead of integer-to-float conversions; against 53d25a7's binary (.gl/bin_old), two
# interleaved rounds, forward and backward; registers of the tiled kernels; the q4_linear
# GPU tests. The change is kept as docs/experiments/q4_linear_tiled-s40-steploads.diff (on 53d25a7; apply
# with `git apply`, build, then prepare). Outcome (run 6, an H100): 1-28% slower; journal,
# session 40; not kept (run 7, run-s40f.sh, kept the decode alone).
# Here:   bash docs/experiments/run-s40e.sh prepare   (53d25a7's etvk in /tmp/bin_old)
# There:  (device tool, carry [".gl"])  bash .gl/run-s40e.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_carry_ab /tmp/bin_old/etvk
}
exp_begin "$0" "$@"
gzip -d -f .gl/bin_old/etvk.gz && chmod +x .gl/bin_old/etvk
row() {
    ETVK_Q4_MMA=0 EXP_CEILING_MIB=256 exp_line "$1" "$2" --m "$3" --n "$4" --k "$5"
}
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    for round in 1 2; do
        for case in "512 8192 8192" "512 28672 8192" "512 8192 28672" "2048 8192 8192" "128 8192 8192" "64 8192 8192"; do
            read -r m n k <<<"$case"
            for op in linear_q4gsw linear_q4gsw_backward; do
                for b in old new; do
                    bin=.gl/bin/etvk
                    [ "$b" = old ] && bin=.gl/bin_old/etvk
                    echo -n "r$round $b $op M=$m N=$n K=$k: "; row $bin $op $m $n $k
                done
            done
        done
    done
    echo "== registers (new)"
    ETVK_PIPELINE_STATS=1 ETVK_Q4_MMA=0 timeout 120 .gl/bin/etvk bench linear_q4gsw_backward --m 512 --n 8192 --k 8192 --iters 2 --ceiling-mib 64 2>&1 | grep -i "tiled" | head -8
    ETVK_PIPELINE_STATS=1 ETVK_Q4_MMA=0 timeout 120 .gl/bin/etvk bench linear_q4gsw --m 512 --n 8192 --k 8192 --iters 2 --ceiling-mib 64 2>&1 | grep -i "tiled" | head -8
    echo "== registers (old)"
    ETVK_PIPELINE_STATS=1 ETVK_Q4_MMA=0 timeout 120 .gl/bin_old/etvk bench linear_q4gsw --m 512 --n 8192 --k 8192 --iters 2 --ceiling-mib 64 2>&1 | grep -i "tiled" | head -8
    echo "== q4_linear tests"
    timeout 300 .gl/bin/q4_linear --test-threads=2 2>&1 | grep -v ' \.\.\. ok$' | tail -30 || true
} 2>&1 | tee "$OUT/s40e.txt"
