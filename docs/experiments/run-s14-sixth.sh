#!/usr/bin/env bash
# Session 14, run 6: the q4_linear tests on the H200 (with the forced f16 forward test's
# compile specs fixed), then the issue's full table (scripts/device-bench.sh) at the commit
# with the f16 tensor-core forward from M = 256.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s14-fifth.sh prepare
#         && cp docs/experiments/run-s14-sixth.sh .gl/
# There:  (device tool, carry [".gl"])  bash .gl/run-s14-sixth.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
.gl/bin/etvk bench linear_q4gsw_backward --m 32 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
for t in .gl/bin/q4_linear-*; do timeout 120 "$t" --test-threads=2 2>&1 | grep -v ' \.\.\. ok$' | head -60 || true; done | tee "$OUT/s14-sixth-tests.txt"
bash .gl/device-bench.sh
