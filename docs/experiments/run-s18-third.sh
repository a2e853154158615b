#!/usr/bin/env bash
# Session 18, device run 4: the double-buffered portable GEMM (DBUF = 1) ran at 163-169
# registers in run 3 (one workgroup per SM, against two for the built kernel at 113): its
# forms with less unrolling (RRU rows per unrolled block) and without glslc -O, by override,
# tensor cores off; registers of each; M = 512 at three shapes and M = 128 at 8192^2.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s18-third.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s18-third.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
VARIANTS="a:-O: b:: c:-O:-DRRU=4 d::-DRRU=4 e:-O:-DRRU=2 g::-DRRU=2"
if [ "${1:-}" = "prepare" ]; then
    for v in $VARIANTS; do
        IFS=: read -r name opt def <<< "$v"
        mkdir -p .gl/ovr_$name
        for bwd in fwd:0 bwd:1; do for tile in t32x128:32 t64:64 t128:128; do for sp in "":0 _split:1; do
            n="q4_linear_tiled_${bwd%%:*}_${tile%%:*}${sp%%:*}"
            # shellcheck disable=SC2086
            glslc --target-env=vulkan1.2 $opt -fshader-stage=compute -I shaders -DBWD=${bwd##*:} \
                -DTILE=${tile##*:} -DSPLIT=${sp##*:} -DDBUF=1 $def -o .gl/ovr_$name/$n.spv shaders/q4_linear_tiled.comp
        done; done; done
    done
    cp docs/experiments/run-s18-third.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
export ETVK_Q4_MMA=0
{
    .gl/bin/etvk bench linear_q4gsw --m 512 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for v in built a b c d e g; do
        d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
        for op in linear_q4gsw linear_q4gsw_backward; do
            ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=$d .gl/bin/etvk bench $op --m 512 --n 8192 --k 8192 --iters 1 --ceiling-mib 64 2>&1 |
                grep -E "stats.*tiled" | head -1 | sed -E "s/^.*stats (\S+) .*Register Count=([0-9]+).*/$v \1 regs \2/" || true
        done
    done
    for shape in "8192 8192 512" "28672 8192 512" "8192 28672 512" "8192 8192 128"; do
        set -- $shape
        for op in linear_q4gsw linear_q4gsw_backward; do
            for v in built a b c d e g; do
                d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
                echo -n "$v $op M=$3 N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row $op --m $3 --n $1 --k $2
            done
        done
    done
} 2>&1 | tee "$OUT/s18-third.txt"
