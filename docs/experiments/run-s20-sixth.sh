#!/usr/bin/env bash
# Session 20, run 6: the sliced half GEMV with TOUCH = 1 (its invocations past the slice's
# half chunks touch the slice's part of the rows a block ahead) against the built one, by
# override of q4_linear_gemv_half_sliced_n512.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s20-sixth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s20-sixth.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    # The switch lives in docs/experiments/q4_linear_gemv_half-sliced-touch.diff (applies to 7faa722).
    src=$(mktemp -d); cp -r shaders "$src/"
    (cd "$src" && patch -s -p1 < "$OLDPWD/docs/experiments/q4_linear_gemv_half-sliced-touch.diff")
    d=.gl/ovr_touch; mkdir -p $d
    glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I "$src/shaders" -DNT=512 -DSLICED=1 -DTOUCH=1 \
        -o $d/q4_linear_gemv_half_sliced_n512.spv "$src/shaders/q4_linear_gemv_half.comp"
    rm -rf "$src"
    cp docs/experiments/run-s20-sixth.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_touch .gl/bin/etvk bench linear_q4gsw \
        --m 1 --n 8192 --k 28672 --iters 1 --ceiling-mib 64 2>&1 | grep -E "stats.*half" | head -1 |
        sed -E "s/^.*stats (\S+) .*Register Count=([0-9]+).*/touch \1 regs \2/" || true
    for shape in "8192 28672" "4096 14336" "8192 12288" "2048 28672" "8192 16384" "8192 28672"; do
        set -- $shape
        for v in built touch; do
            d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
            echo -n "$v fwd M=1 N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw --m 1 --n $1 --k $2
        done
    done
    for v in built touch; do
        d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
        echo -n "$v qcs4w M=1 8192x28672: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_qcs4w --m 1 --n 8192 --k 28672
    done
    echo "sliced test with touch:"; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_touch q4_tests sliced
} 2>&1 | tee "$OUT/s20-sixth.txt"
