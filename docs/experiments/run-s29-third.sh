#!/usr/bin/env bash
# Session 29, runs 3-5 (runs 4 and 5 after the pointwise rules of the commits after 461c495): run 2's mobilenet_v2 profile again, with the head of the table (run 2
# printed its tail only, without the GPU total). Same binary and program as run 2.
# Here:   as run-s29-second.sh, then bash docs/experiments/run-s29-third.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s29-third.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
{
    calls=()
    for _ in $(seq 20); do calls+=(--call .gl/models/x224.npy); done
    .gl/bin/etvk run .gl/models/mobilenet_v2_224.pte "${calls[@]}" >/dev/null 2>&1 || true
    .gl/bin/etvk run --profile .gl/models/mobilenet_v2_224.pte "${calls[@]}" 2>&1 |
        grep -v '^call\|^  out' | head -30
} 2>&1 | tee "$OUT/s29-third.txt"
