#!/usr/bin/env bash
# Session 40, seventh run: which of run 6's three changes to the portable tiled kernels'
# step cost the time? By override of q4_linear_tiled_{fwd,bwd}_t128 and
# q4_linear_tiled_{fwd,bwd}_t64_split, one change each (switches SW_AVEC, SW_SCALE, SW_MAGIC
# of q4_linear_tiled-s40-steploads.diff), against 53d25a7's kernels, two rounds,
# ETVK_Q4_MMA=0.
# Here:   bash docs/experiments/run-s40f.sh prepare   (53d25a7's etvk in /tmp/bin_old)
# There:  (device tool, carry [".gl"])  bash .gl/run-s40f.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
VARIANTS=("avec -DSW_SCALE=0 -DSW_MAGIC=0" "scale -DSW_AVEC=0 -DSW_MAGIC=0" "magic -DSW_AVEC=0 -DSW_SCALE=0")
exp_prepare() {
    exp_carry_binary /tmp/bin_old/etvk
    exp_patched docs/experiments/q4_linear_tiled-s40-steploads.diff 53d25a7
    local v name defs
    for v in "${VARIANTS[@]}"; do
        read -r name defs <<<"$v"
        # shellcheck disable=SC2086
        {
            exp_comp $name q4_linear_tiled_fwd_t128 q4_linear_tiled.comp -O -DDBUF=1 -DBWD=0 -DTILE=128 $defs
            exp_comp $name q4_linear_tiled_bwd_t128 q4_linear_tiled.comp -O -DDBUF=1 -DBWD=1 -DTILE=128 $defs
            exp_comp $name q4_linear_tiled_fwd_t64_split q4_linear_tiled.comp -O -DDBUF=1 -DBWD=0 -DTILE=64 -DSPLIT=1 $defs
            exp_comp $name q4_linear_tiled_bwd_t64_split q4_linear_tiled.comp -O -DDBUF=1 -DBWD=1 -DTILE=64 -DSPLIT=1 $defs
        }
    done
}
exp_begin "$0" "$@"
row() {
    EXP_CEILING_MIB=256 exp_line .gl/bin/etvk "$1" --m "$2" --n 8192 --k 8192
}
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    export ETVK_Q4_MMA=0
    for round in 1 2; do
        for m in 512 64; do
            for op in linear_q4gsw linear_q4gsw_backward; do
                echo -n "r$round built $op M=$m: "; row $op $m
                for v in avec scale magic; do
                    echo -n "r$round $v $op M=$m: "; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v row $op $m
                done
            done
        done
    done
} 2>&1 | tee "$OUT/s40f.txt"
