#!/usr/bin/env bash
# Session 12, run 2: the q4_linear tests on the H200 with the backward's new split-K (slices
# of at most 2048 rows, one wave targeted), then the full table (scripts/device-bench.sh) with
# the bench's new copy count (8x the host traffic per execute in weights, so the GPU stays
# busy and keeps its clock) and the clocks, power and throttle reasons sampled beside it.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s12-table.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s12-table.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cargo test --release -p etvk-runtime --test q4_linear --no-run 2>&1 |
        sed -n 's/.*(\(target\/release\/deps\/q4_linear-[0-9a-f]*\))/\1/p' |
        while read -r t; do rm -f .gl/bin/q4_linear-*; cp "$t" .gl/bin/; done
    cp docs/experiments/run-s12-table.sh .gl/run-s12-table.sh
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv -lms 100 >"$OUT/smi.csv" 2>&1 &
smi=$!
{
    # The tests force validation on: the layer comes from .gl (device-bench.sh prepare).
    for t in .gl/bin/q4_linear-*; do "$t" --test-threads=1 2>&1 | grep -v ' \.\.\. ok$' | head -80 || true; done
    date +%T
} 2>&1 | tee "$OUT/tests.txt"
bash .gl/device-bench.sh || true
kill $smi || true
