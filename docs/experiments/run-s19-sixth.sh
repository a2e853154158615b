#!/usr/bin/env bash
# Session 19, run 7 (by override, right on lavapipe): the half GEMV with its first block's
# second batch loaded before the activations (PEEL = 1: weights and scales; 2: weights only,
# scales after the limbs), that block peeled off the loop, so that 8 rows per invocation are
# in flight while the limbs are made (~1.3 us of issue at the start, estimated).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s19-sixth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s19-sixth.sh
# Source: the PEEL switch is in docs/experiments/q4_linear_gemv_half-peel.diff (applies to
# dc233fa). Not kept (journal, session 19 run 7).
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    for v in 1 2; do
        d=.gl/ovr_peel$v; mkdir -p $d
        glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I shaders -DNT=512 -DPEEL=$v \
            -o $d/q4_linear_gemv_half_n512.spv shaders/q4_linear_gemv_half.comp
    done
    cp docs/experiments/run-s19-sixth.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for v in peel1 peel2; do
        ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v .gl/bin/etvk bench linear_q4gsw \
            --m 1 --n 8192 --k 8192 --iters 1 --ceiling-mib 64 2>&1 |
            grep -E "stats.*half" | head -1 | sed -E "s/^.*stats (\S+) .*Register Count=([0-9]+).*/$v \1 regs \2/" || true
    done
    for shape in "8192 8192" "8192 8192" "28672 8192" "2048 8192" "8192 6144"; do
        set -- $shape
        for v in built peel1 peel2; do
            d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
            echo -n "$v fwd M=1 N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw --m 1 --n $1 --k $2
        done
    done
} 2>&1 | tee "$OUT/s19-seventh.txt"
