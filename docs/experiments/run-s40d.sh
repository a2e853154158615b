#!/usr/bin/env bash
# Session 40, fourth run: the issue's M = 1 floor again (q4gsw GEMV at the three shapes, the
# backward beside it), three interleaved rounds against the same run's 2-GiB read ceiling,
# on whatever card comes (an H200 asked for). 53d25a7's binary (the 4-bit kernels unchanged
# since session 38).
# Here:   bash docs/experiments/run-s40d.sh prepare   (53d25a7's etvk in /tmp/bin_old)
# There:  (device tool, carry [".gl"])  bash .gl/run-s40d.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_carry_binary /tmp/bin_old/etvk
}
exp_begin "$0" "$@"
row() {
    EXP_ITERS=30 EXP_CEILING_MIB=2048 exp_line .gl/bin/etvk "$1" --m 1 --n "$2" --k "$3"
}
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    .gl/bin/etvk bench read --ceiling-mib 2048 2>&1 | grep -iE "read|copy" | head -4
    for round in 1 2 3; do
        for shape in "8192 8192" "28672 8192" "8192 28672"; do
            read -r n k <<<"$shape"
            echo -n "r$round fwd N=$n K=$k: "; row linear_q4gsw $n $k
            echo -n "r$round bwd N=$n K=$k: "; row linear_q4gsw_backward $n $k
        done
    done
} 2>&1 | tee "$OUT/s40d.txt"
