#!/usr/bin/env bash
# Session 14, run 3: adamw_step from replays (no host copies between the timed steps) at
# 2^24 / 2^25 / 2^26 parameters, beside timing-only variants that read m, v and grad at
# indices skewed from param's (16-48 KiB apart, or 3/8, 5/8, 7/8 of the buffer apart: does
# the cliff from 2^25 come from the four streams meeting in the same DRAM channels?); then
# the issue's full table (scripts/device-bench.sh) at the current commit.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s14-third.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s14-third.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    mkdir -p .gl/exp14/skew .gl/exp14/skewfar
    src=.gl/exp14/skewsrc/adamw_step.comp
    [ -f "$src" ] || { echo "the skewed adamw source is made by hand (session 14 notes)" >&2; exit 1; }
    glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I shaders -DFAR=false -DSKEW_M=1031u \
        -DSKEW_V=2063u -DSKEW_G=3079u -o .gl/exp14/skew/adamw_step_f32.spv "$src"
    glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I shaders -DFAR=true -DSKEW_M=3u \
        -DSKEW_V=5u -DSKEW_G=7u -o .gl/exp14/skewfar/adamw_step_f32.spv "$src"
    cp docs/experiments/run-s14-third.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
{
    for numel in $((1 << 24)) $((1 << 25)) $((1 << 26)); do
        for v in default skew skewfar; do
            echo -n "adamw $v $numel: "
            if [ $v = default ]; then
                $e bench adamw_step --numel $numel --ceiling-mib 2048 2>&1 | tail -1
            else
                ETVK_SPIRV_OVERRIDE_DIR=$PWD/.gl/exp14/$v $e bench adamw_step --numel $numel --ceiling-mib 2048 2>&1 | tail -1
            fi
        done
    done
} 2>&1 | tee "$OUT/s14-adamw.txt"
bash .gl/device-bench.sh
