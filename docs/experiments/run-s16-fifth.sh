#!/usr/bin/env bash
# Session 16, run 5: the half GEMV's block sums by a subgroup transpose-reduce (-DSGRED=1, one
# barrier per block, by override) against the built shared-memory sums, M = 1; M = 2 both ops;
# then the full table of scripts/device-bench.sh at this commit.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s16-fifth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s16-fifth.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    mkdir -p .gl/ovr_sg
    glslc --target-env=vulkan1.2 -fshader-stage=compute -O -I shaders -DNT=512 -DSGRED=1 \
        -o .gl/ovr_sg/q4_linear_gemv_half_n512.spv shaders/q4_linear_gemv_half.comp
    cp docs/experiments/run-s16-fifth.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
{
    $e bench linear_q4gsw_backward --m 32 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_sg $e bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 3 2>&1 | grep -E "stats.*half" | head -1 || true
    for r in 1 2 3; do
        for s in "8192 8192" "28672 8192"; do
            set -- $s
            echo -n "built #$r N=$1 K=$2: "; bench_row linear_q4gsw --m 1 --n $1 --k $2
            echo -n "sgred #$r N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_sg bench_row linear_q4gsw --m 1 --n $1 --k $2
        done
        echo -n "qcs4w built #$r: "; bench_row linear_qcs4w --m 1 --n 8192 --k 8192
        echo -n "qcs4w sgred #$r: "; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_sg bench_row linear_qcs4w --m 1 --n 8192 --k 8192
    done
    for s in "8192 8192" "28672 8192" "8192 28672"; do
        set -- $s
        echo -n "M=2 fwd N=$1 K=$2: "; bench_row linear_q4gsw --m 2 --n $1 --k $2
        echo -n "M=2 bwd N=$1 K=$2: "; bench_row linear_q4gsw_backward --m 2 --n $1 --k $2
    done
} 2>&1 | tee "$OUT/s16-fifth.txt"
bash .gl/device-bench.sh >/dev/null 2>&1 || true
