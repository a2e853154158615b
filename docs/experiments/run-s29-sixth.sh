#!/usr/bin/env bash
# Session 29, run 6: the int8-weight GEMVs with a uvec4 (16 codes) per lane and load (the
# commit after 63faae2) against run 2's one word per lane (M = 1 4096^2 13.9 us, 8192^2 30.3,
# M = 4 4096^2 26.0, M = 8 41.4 / 183.3), and the fp32 GEMV beside them.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s29-sixth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s29-sixth.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
{
    .gl/bin/etvk bench read --ceiling-mib 1024 2>&1 | grep -E 'ceiling' || true
    for c in "1 4096 4096" "4 4096 4096" "8 4096 4096" "1 8192 8192" "8 8192 8192" \
        "1 28672 8192"; do
        set -- $c
        echo -n "linear_q8 M=$1 N=$2 K=$3: "
        exp_row .gl/bin/etvk bench linear_q8 --m "$1" --n "$2" --k "$3"
    done
} 2>&1 | tee "$OUT/s29-sixth.txt"
