#!/usr/bin/env bash
# Session 22, run 1: the half GEMV's loads as if the prepacked layouts were interleaved
# (timing only: the variants read the same bytes at other places, so results are wrong).
# Variants of shaders/q4_linear_gemv_half.comp by override
# (docs/experiments/q4_linear_gemv_half-s22-ilv.diff; needs N % 4 == 0):
#   ilvw  ILVW = 1: weights as [N/2][2 KC][2] uvec2, a batch of 4 rows in two uvec4 loads
#         (was four uvec2 loads, each with its own clamped row address)
#   ilvs  ILVS = 1: scales as [N/4][G][4], a batch's 4 scales in one vec4 load (was four)
#   ilv   both: 3 loads per batch instead of 8, one clamp per batch
# Then session 21's prepared wide-fit run (run-s21-next.sh, if .gl/bin/etvk-fit exists).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s21-next.sh prepare &&
#         bash docs/experiments/run-s22-first.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s22-first.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    src=$(mktemp -d); cp -r shaders "$src/"
    (cd "$src" && patch -s -p1 < "$OLDPWD/docs/experiments/q4_linear_gemv_half-s22-ilv.diff")
    comp() { # name, defines...
        local d=.gl/ovr_$1; shift; rm -rf "$d"; mkdir -p "$d"
        glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I "$src/shaders" "$@" \
            -o "$d/q4_linear_gemv_half.spv" "$src/shaders/q4_linear_gemv_half.comp"
        glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I "$src/shaders" -DSLICED=1 "$@" \
            -o "$d/q4_linear_gemv_half_sliced.spv" "$src/shaders/q4_linear_gemv_half.comp"
    }
    comp ilvw -DILVW=1; comp ilvs -DILVS=1; comp ilv -DILVW=1 -DILVS=1
    rm -rf "$src"
    cp docs/experiments/run-s22-first.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
vs="built ilvw ilvs ilv"
ovr() { if [ "$1" = built ]; then echo /nonexistent; else echo .gl/ovr_$1; fi; }
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for v in $vs; do
        ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=$(ovr $v) .gl/bin/etvk bench linear_q4gsw \
            --m 1 --n 8192 --k 8192 --iters 1 --ceiling-mib 64 2>&1 |
            grep -E "stats.*half" | head -1 | sed -E "s/^.*stats (\S+) .*Register Count=([0-9]+).*/$v \1 regs \2/" || true
    done
    for shape in "8192 8192" "28672 8192" "8192 28672" "8192 8192" "4096 4096" "8192 2048"; do
        set -- $shape
        for v in $vs; do
            echo -n "$v fwd M=1 N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=$(ovr $v) bench_row linear_q4gsw --m 1 --n $1 --k $2
        done
    done
    for v in $vs; do
        echo -n "$v qcs4w M=1 8192^2: "; ETVK_SPIRV_OVERRIDE_DIR=$(ovr $v) bench_row linear_qcs4w --m 1 --n 8192 --k 8192
    done
} 2>&1 | tee "$OUT/s22-first.txt"
if [ -x .gl/bin/etvk-fit ]; then bash .gl/run-s21-next.sh; fi
