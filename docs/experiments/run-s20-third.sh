#!/usr/bin/env bash
# Session 20, run 3: registers and times of the half GEMV's shared-memory scale forms
# (SCSH = 1 vec4 array, 2 float array, 3 float array with the next block's scales loaded
# with its first batch; each with glslc -O and without: suffix _o0) and SCV (timing only,
# wrong results: one vec4 scale load per 4-row batch, the pattern of a [n / 8][g][8] layout),
# SCSF (32-lane subgroups: a batch's scales in two loads of two rows x 16 groups per
# subgroup, handed out by shuffles).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s20-third.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s20-third.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    # The switches live in docs/experiments/q4_linear_gemv_half-s20.diff (applies to 793aea9).
    s20=$(mktemp -d); cp -r shaders "$s20/"
    (cd "$s20" && patch -s -p1 < "$OLDPWD/docs/experiments/q4_linear_gemv_half-s20.diff")
    comp() { # name, opt flag, defines...
        local d=.gl/ovr_$1 o=$2; shift 2; mkdir -p "$d"
        # shellcheck disable=SC2086
        glslc --target-env=vulkan1.2 $o -fshader-stage=compute -I "$s20/shaders" -DNT=512 "$@" \
            -o "$d/q4_linear_gemv_half_n512.spv" "$s20/shaders/q4_linear_gemv_half.comp"
    }
    for v in 1 2 3; do comp scsh$v -O -DSCSH=$v; comp scsh${v}_o0 "" -DSCSH=$v; done
    comp scv -O -DSCV=1; comp scv_o0 "" -DSCV=1; comp scsf -O -DSCSF=1; comp scsf_o0 "" -DSCSF=1
    rm -rf "$s20"
    cp docs/experiments/run-s20-third.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
vs="built scsh1 scsh1_o0 scsh2 scsh2_o0 scsh3 scsh3_o0 scv scv_o0 scsf scsf_o0"
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for v in $vs; do
        [ "$v" = built ] && continue
        ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v .gl/bin/etvk bench linear_q4gsw \
            --m 1 --n 8192 --k 8192 --iters 1 --ceiling-mib 64 2>&1 |
            grep -E "stats.*half" | head -1 | sed -E "s/^.*stats (\S+) .*Register Count=([0-9]+).*/$v \1 regs \2/" || true
    done
    for shape in "8192 8192" "28672 8192" "8192 8192"; do
        set -- $shape
        for v in $vs; do
            d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
            echo -n "$v fwd M=1 N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw --m 1 --n $1 --k $2
        done
    done
} 2>&1 | tee "$OUT/s20-third.txt"
