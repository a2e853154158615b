#!/usr/bin/env bash
# Session 19, run 2 (by override, right on lavapipe): the M = 1 wide backward with its loop
# unrolled by two over two batch register sets (PINGPONG = 1, UR = 2 / 4: no copy of a batch
# in flight at the loop's back edge), alone and with run 1's touch-prefetch invocations
# (NPF = 64, PFD = 16); the half GEMV with the next block's first batch moved into place
# after the block's sums (LATECOPY = 1; -O and without -O). Also the GEMV and backward at
# few rows (N = 64, 2112) for the fixed part of their time.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s19-second.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s19-second.sh
# Sources: the shader switches (PINGPONG, NPF, LATECOPY, FIXED_LOCAL_X) are in
# docs/experiments/q4_linear_{bwd_wide,gemv_half}-s19.diff (apply to d535c4e first).
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    for v in pp:2:0 pp4:4:0 ppf:2:64 ppf4:4:64; do
        IFS=: read -r name ur npf <<<"$v"
        d=.gl/ovr_$name; mkdir -p $d
        for cw in 8 16 32; do
            glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders -DMT=1 -DUR=$ur -DPREFETCH=1 \
                -DPINGPONG=1 -DCW=$cw -DNPF=$npf -DPFD=16 $( [ "$npf" != 0 ] && echo -DFIXED_LOCAL_X=$((256 + npf)) ) \
                -o $d/q4_linear_bwd_wide_m1_c$cw.spv shaders/q4_linear_bwd_wide.comp
        done
    done
    for o in glc:-O glc0:; do
        d=.gl/ovr_${o%%:*}; mkdir -p $d
        glslc --target-env=vulkan1.2 ${o##*:} -fshader-stage=compute -I shaders -DNT=512 -DLATECOPY=1 \
            -o $d/q4_linear_gemv_half_n512.spv shaders/q4_linear_gemv_half.comp
    done
    cp docs/experiments/run-s19-second.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for v in pp pp4 ppf ppf4 glc glc0; do
        ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v .gl/bin/etvk bench \
            $( case $v in glc*) echo linear_q4gsw ;; *) echo linear_q4gsw_backward ;; esac ) \
            --m 1 --n 8192 --k 8192 --iters 1 --ceiling-mib 64 2>&1 |
            grep -E "stats.*(wide|half)" | head -1 | sed -E "s/^.*stats (\S+) .*Register Count=([0-9]+).*/$v \1 regs \2/" || true
    done
    for shape in "8192 8192" "28672 8192" "8192 28672"; do
        set -- $shape
        for v in built pp pp4 ppf ppf4 pf64d16 built; do
            d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
            echo -n "$v bwd M=1 N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw_backward --m 1 --n $1 --k $2
        done
        [ "$2" = 28672 ] && continue
        for v in built glc glc0 built; do
            d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
            echo -n "$v fwd M=1 N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw --m 1 --n $1 --k $2
        done
    done
    for n in 64 2112 4224; do
        for op in linear_q4gsw linear_q4gsw_backward; do
            echo -n "built $op M=1 N=$n K=8192: "; bench_row $op --m 1 --n $n --k 8192
        done
        echo -n "glc fwd M=1 N=$n K=8192: "; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_glc bench_row linear_q4gsw --m 1 --n $n --k 8192
    done
} 2>&1 | tee "$OUT/s19-second.txt"
