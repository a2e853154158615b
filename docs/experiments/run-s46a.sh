#!/usr/bin/env bash
# Session 46: run-s45a.sh's most telling rows only, for a short device run: the half GEMV's
# stride walk against its `_tickets` form at M = 1 on 8192^2 (two interleaved rounds) and
# 28672 x 8192 (one), then both walks' timelines at 8192^2 (TIMELINE = 2 by override,
# compiled by run-s45a.sh prepare). Ran once on an H100 (session 46 run 1, with session
# 45's TIMELINE = 1, whose walk the compiler had emptied: its timelines are void).
# Here:   rm -rf .gl/bin/* .gl/ovr_* && bash scripts/device-bench.sh prepare && bash docs/experiments/run-s45a.sh prepare && bash docs/experiments/run-s46a.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s46a.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
{
    exp_header
    for shape in "8192 8192" "28672 8192" "8192 8192"; do
        read -r n k <<<"$shape"
        echo -n "stride  N=$n K=$k: "; exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
        echo -n "tickets N=$n K=$k: "; ETVK_Q4_HALF_TICKETS=1 exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
    done
    for walk in stride tickets; do
        t=0; [ $walk = tickets ] && t=1
        p="$OUT/tl-$walk-8192"
        ETVK_Q4_HALF_TICKETS=$t ETVK_SHADER_CLOCK=1 ETVK_SELF_CHECKS=0 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_tl \
            ETVK_BENCH_DUMP="$p" timeout 60 .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 \
            --iters 3 --ceiling-mib 64 2>&1 | grep -oE "kernels [a-z0-9_ +]*" | head -1 || true
        rm -f "$p.w.u8" "$p.s.f32" "$p.x.f32"
        echo "-- $walk 8192^2"
        python3 .gl/timeline.py "$p.out.f32" || echo "(no python3: read $p.out.f32 here)"
    done
} 2>&1 | tee "$OUT/s46a.txt"
