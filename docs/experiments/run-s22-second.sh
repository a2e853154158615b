#!/usr/bin/env bash
# Session 22, run 2: run 1 found the interleaved layouts (ILVW + ILVS, 3 loads per batch, one
# clamp) 0.3-2.1 us faster than the built half GEMV, but neither alone. Which part counts:
#   pad       PAD = 1: the built layout with rows padded to whole blocks (right results when
#             N % 8 == 0): one base index per batch, no clamp per row
#   ilvspad   scales as [N/4][G][4] (one vec4 per batch) + padded weight rows
#   ilv       run 1's both-interleaved form again; ilvpad: the same without its batch clamp
#   padchain / ilvchain: pad / ilv with the dot products in chains from the -8's sum
# (docs/experiments/q4_linear_gemv_half-s22-ilv.diff; every variant needs N % 4 == 0).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s22-second.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s22-second.sh
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
    comp pad -DPAD=1; comp ilvspad -DILVS=1 -DPAD=1; comp ilv -DILVW=1 -DILVS=1
    comp ilvpad -DILVW=1 -DILVS=1 -DPAD=1; comp padchain -DPAD=1 -DCHAIN=1
    comp ilvchain -DILVW=1 -DILVS=1 -DCHAIN=1
    rm -rf "$src"
    cp docs/experiments/run-s22-second.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
vs="built pad ilvspad ilv ilvpad padchain ilvchain"
ovr() { if [ "$1" = built ]; then echo /nonexistent; else echo .gl/ovr_$1; fi; }
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for v in $vs; do
        ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=$(ovr $v) .gl/bin/etvk bench linear_q4gsw \
            --m 1 --n 8192 --k 8192 --iters 1 --ceiling-mib 64 2>&1 |
            grep -E "stats.*half" | head -1 | sed -E "s/^.*stats (\S+) .*Register Count=([0-9]+).*/$v \1 regs \2/" || true
    done
    for shape in "8192 8192" "28672 8192" "8192 28672" "8192 8192"; do
        set -- $shape
        for v in $vs; do
            echo -n "$v fwd M=1 N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=$(ovr $v) bench_row linear_q4gsw --m 1 --n $1 --k $2
        done
    done
    for v in $vs; do
        echo -n "$v qcs4w M=1 8192^2: "; ETVK_SPIRV_OVERRIDE_DIR=$(ovr $v) bench_row linear_qcs4w --m 1 --n 8192 --k 8192
    done
} 2>&1 | tee "$OUT/s22-second.txt"
