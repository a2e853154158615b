#!/usr/bin/env bash
# Session 20, run 1: where the half GEMV's fixed ~6.2 us go, and whether the second stage of
# its per-block sums (one invocation per row adding 64 partials in one dependent chain) is
# part of it. Variants of shaders/q4_linear_gemv_half.comp by override:
#   s2cC   SUM2C = C independent chains in the second stage (4, 8, 16)
#   rw4    RW = 4 rows per block (one batch), SUM2C = 8
#   nored  DIAG_NORED: no sums, one partial per row written (wrong results: diagnostic)
#   nox / nolimb: session 19's prepared diagnostics (docs/experiments/q4_linear_gemv_half-diag.diff)
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s20-first.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s20-first.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    # The switches live in docs/experiments/q4_linear_gemv_half-s20.diff (applies to 793aea9).
    s20=$(mktemp -d); cp -r shaders "$s20/"
    (cd "$s20" && patch -s -p1 < "$OLDPWD/docs/experiments/q4_linear_gemv_half-s20.diff")
    comp() { # name, defines...
        local d=.gl/ovr_$1 src=${SRC:-$s20/shaders}; shift; mkdir -p "$d"
        glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I "$src" -DNT=512 "$@" \
            -o "$d/q4_linear_gemv_half_n512.spv" "$src/q4_linear_gemv_half.comp"
    }
    comp s2c4 -DSUM2C=4; comp s2c8 -DSUM2C=8; comp s2c16 -DSUM2C=16
    comp rw4 -DRW=4 -DSUM2C=8; comp nored -DDIAG_NORED=1
    tmp=$(mktemp -d); cp -r shaders "$tmp/"
    (cd "$tmp" && patch -s -p1 < "$OLDPWD/docs/experiments/q4_linear_gemv_half-diag.diff")
    SRC=$tmp/shaders comp nox -DDIAG_NOX=1; SRC=$tmp/shaders comp nolimb -DDIAG_NOLIMB=1
    rm -rf "$tmp"
    rm -rf "$s20"
    cp docs/experiments/run-s20-first.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
vs="built s2c4 s2c8 s2c16 rw4 nored nox nolimb"
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for v in $vs; do
        [ "$v" = built ] && continue
        ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v .gl/bin/etvk bench linear_q4gsw \
            --m 1 --n 8192 --k 8192 --iters 1 --ceiling-mib 64 2>&1 |
            grep -E "stats.*half" | head -1 | sed -E "s/^.*stats (\S+) .*Register Count=([0-9]+).*/$v \1 regs \2/" || true
    done
    for shape in "8192 8192" "64 8192" "2112 8192" "28672 8192" "8192 8192"; do
        set -- $shape
        for v in $vs; do
            d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
            echo -n "$v fwd M=1 N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw --m 1 --n $1 --k $2
        done
    done
    for w in 256 200; do
        for v in built s2c8; do
            d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
            echo -n "$v wgs=$w fwd M=1 8192^2: "
            ETVK_Q4_WIDE_WGS=$w ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw --m 1 --n 8192 --k 8192
        done
    done
    for v in built s2c8 s2c16; do
        d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
        echo -n "$v qcs4w M=1 8192^2: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_qcs4w --m 1 --n 8192 --k 8192
    done
} 2>&1 | tee "$OUT/s20-first.txt"
