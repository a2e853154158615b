#!/usr/bin/env bash
# Session 40, first run: the staged backward (M = 3..8) with its work in equal parts over one
# wave (select::staged_bwd_geometry) instead of whole row slices per column block, against
# session 39's binary (.gl/bin_old, 53d25a7); the forward at the same M for the ratio; the
# q4_linear GPU tests (the staged cases now include parts that run on into the next block).
# The change is kept as docs/experiments/q4_linear_bwd_staged-s40-parts.diff (shader, runtime
# and tests: apply it with `git apply` and build before prepare). Outcome (run 1, an H200):
# slower on 9 of 10 rows; journal, session 40; not kept.
# Here:   bash docs/experiments/run-s40a.sh prepare   (after cp of 53d25a7's etvk to /tmp/bin_old)
# There:  (device tool, carry [".gl"])  bash .gl/run-s40a.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_carry_ab /tmp/bin_old/etvk
}
exp_begin "$0" "$@"
exp_staged_ab 2>&1 | tee "$OUT/s40a.txt"
