#!/usr/bin/env bash
# Session 40, third run: the staged backward (M = 3..8) with column blocks of 4-8 chunks that fill
# the wave where blocks of 8 leave SMs idle (select::staged_bwd_geometry), against
# session 39's binary (.gl/bin_old, 53d25a7); the forward at the same M for the ratio; the
# q4_linear GPU tests. The change is kept as docs/experiments/q4_linear_bwd_staged-s40-blocks.diff
# (apply with `git apply`, build, then prepare). Outcome (run 3, an H100): 3% slower where it
# applies; journal, session 40; not kept.
# Here:   bash docs/experiments/run-s40c.sh prepare   (after cp of 53d25a7's etvk to /tmp/bin_old)
# There:  (device tool, carry [".gl"])  bash .gl/run-s40c.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_carry_ab /tmp/bin_old/etvk
}
exp_begin "$0" "$@"
exp_staged_ab 2>&1 | tee "$OUT/s40c.txt"
