#!/usr/bin/env bash
# Session 20, run 2: the half GEMV with each block's scales loaded one block ahead as one
# vec4 per invocation and read from shared memory (SCSH = 1 in
# shaders/q4_linear_gemv_half.comp), by override; UR = 8: one 8-row batch per block.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s20-second.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s20-second.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    # The switches live in docs/experiments/q4_linear_gemv_half-s20.diff (applies to 793aea9).
    s20=$(mktemp -d); cp -r shaders "$s20/"
    (cd "$s20" && patch -s -p1 < "$OLDPWD/docs/experiments/q4_linear_gemv_half-s20.diff")
    comp() { # name, defines...
        local d=.gl/ovr_$1; shift; mkdir -p "$d"
        glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I "$s20/shaders" -DNT=512 "$@" \
            -o "$d/q4_linear_gemv_half_n512.spv" "$s20/shaders/q4_linear_gemv_half.comp"
    }
    comp scsh -DSCSH=1; comp scsh_ur8 -DSCSH=1 -DUR=8; comp scsh_ur2 -DSCSH=1 -DUR=2
    rm -rf "$s20"
    cp docs/experiments/run-s20-second.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
vs="built scsh scsh_ur8 scsh_ur2"
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for v in $vs; do
        [ "$v" = built ] && continue
        ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v .gl/bin/etvk bench linear_q4gsw \
            --m 1 --n 8192 --k 8192 --iters 1 --ceiling-mib 64 2>&1 |
            grep -E "stats.*half" | head -1 | sed -E "s/^.*stats (\S+) .*Register Count=([0-9]+).*/$v \1 regs \2/" || true
    done
    for shape in "8192 8192" "28672 8192" "2112 8192" "8192 6144" "8192 8192"; do
        set -- $shape
        for v in $vs; do
            d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
            echo -n "$v fwd M=1 N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw --m 1 --n $1 --k $2
        done
    done
    for v in $vs; do
        d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
        echo -n "$v qcs4w M=1 8192^2: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_qcs4w --m 1 --n 8192 --k 8192
        echo -n "$v gs128 M=1 8192^2: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw --m 1 --n 8192 --k 8192 --group-size 128
    done
} 2>&1 | tee "$OUT/s20-second.txt"
