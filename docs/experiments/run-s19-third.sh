#!/usr/bin/env bash
# Session 19, run 3 (by override, right on lavapipe): the half GEMV with two batch register
# sets reloaded as soon as used (PIPE2 = 1: both batches of the next block in flight during
# the block's sums and at the start; -O and without -O); the wide backward's touch-prefetch
# invocations (NPF = 64, PFD = 16) with session 18's fp16 decodes (DEC = 1 / 2, from
# docs/experiments/q4_linear_bwd_wide-dec.diff): with the weights found in L2 the
# instruction count may now matter at 8192^2.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s19-third.sh prepare
#         (the shader must hold the DEC switch: patch -p1 < docs/experiments/q4_linear_bwd_wide-dec.diff)
# There:  (device tool, carry [".gl"])  bash .gl/run-s19-third.sh
# Sources: the shader switches (DEC, NPF, PIPE2) are in
# docs/experiments/q4_linear_{bwd_wide,gemv_half}-s19.diff (apply to d535c4e first).
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    for v in dpf:1:64 dec1:1:0 dec2pf:2:64 pf64d16:0:64; do
        IFS=: read -r name dec npf <<<"$v"
        d=.gl/ovr_$name; mkdir -p $d
        for cw in 8 16 32; do
            glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders -DMT=1 -DUR=2 -DPREFETCH=1 \
                -DCW=$cw -DDEC=$dec -DNPF=$npf -DPFD=16 $( [ "$npf" != 0 ] && echo -DFIXED_LOCAL_X=$((256 + npf)) ) \
                -o $d/q4_linear_bwd_wide_m1_c$cw.spv shaders/q4_linear_bwd_wide.comp
        done
    done
    for o in gp2:-O gp20:; do
        d=.gl/ovr_${o%%:*}; mkdir -p $d
        glslc --target-env=vulkan1.2 ${o##*:} -fshader-stage=compute -I shaders -DNT=512 -DPIPE2=1 \
            -o $d/q4_linear_gemv_half_n512.spv shaders/q4_linear_gemv_half.comp
    done
    cp docs/experiments/run-s19-third.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for v in dpf dec1 dec2pf gp2 gp20; do
        ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v .gl/bin/etvk bench \
            $( case $v in gp*) echo linear_q4gsw ;; *) echo linear_q4gsw_backward ;; esac ) \
            --m 1 --n 8192 --k 8192 --iters 1 --ceiling-mib 64 2>&1 |
            grep -E "stats.*(wide|half)" | head -1 | sed -E "s/^.*stats (\S+) .*Register Count=([0-9]+).*/$v \1 regs \2/" || true
    done
    for shape in "8192 8192" "28672 8192" "4096 8192" "8192 6144"; do
        set -- $shape
        for v in built gp2 gp20 built; do
            d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
            echo -n "$v fwd M=1 N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw --m 1 --n $1 --k $2
        done
    done
    for rep in 1 2; do
        for v in built pf64d16 dpf dec1 dec2pf; do
            d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
            echo -n "$v bwd M=1 N=8192 K=8192: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw_backward --m 1 --n 8192 --k 8192
        done
    done
    for n in 64 2112; do
        echo -n "gp2 fwd M=1 N=$n K=8192: "; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_gp2 bench_row linear_q4gsw --m 1 --n $n --k 8192
    done
} 2>&1 | tee "$OUT/s19-third.txt"
