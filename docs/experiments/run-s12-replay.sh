#!/usr/bin/env bash
# Session 12, run 3: the full table (scripts/device-bench.sh) with the bench replaying the
# recorded work between repetitions (no host copies: the GPU stays busy and keeps its
# clock), the GPU's clocks, power and throttle reasons sampled every 100 ms beside it.
# Here:   scripts/device-bench.sh prepare && cp docs/experiments/run-s12-replay.sh .gl/
# There:  (device tool, carry [".gl"])  bash .gl/run-s12-replay.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv -lms 100 >"$OUT/smi.csv" 2>&1 &
smi=$!
bash .gl/device-bench.sh || true
kill $smi || true
