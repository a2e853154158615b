#!/usr/bin/env bash
# Session 22, run 4: run 3's losses mended in the working tree. The wide backward's touch
# invocations now touch every sector of the quads' scales (run 3 touched a quarter of them:
# M = 1 at 8192^2 19.2 -> 19.7 us), and it loads a batch's scales as one vec2 / vec4 (SVEC;
# `svec0` here: the same kernels with SVEC = 0, by override); the persistent int8 GEMV loads
# a batch's four scales as one vec4 (run 3: M = 4 at 8192^2 34.5 -> 35.8). New / old binary.
# Here:   scripts/device-bench.sh prepare && cp OLD_ETVK .gl/bin/etvk-old &&
#         bash docs/experiments/run-s22-fourth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s22-fourth.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    d=.gl/ovr_svec0; rm -rf "$d"; mkdir -p "$d"
    for cw in 8 16 32; do
        glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders -DMT=1 -DUR=2 -DPREFETCH=1 \
            -DDEC=1 -DNPF=64 -DCW=$cw -DSVEC=0 -o "$d/q4_linear_bwd_wide_f16t_m1_c$cw.spv" shaders/q4_linear_bwd_wide.comp
        glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders -DMT=1 -DUR=2 -DPREFETCH=1 \
            -DDEC=1 -DCW=$cw -DSVEC=0 -o "$d/q4_linear_bwd_wide_f16_m1_c$cw.spv" shaders/q4_linear_bwd_wide.comp
    done
    cp docs/experiments/run-s22-fourth.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
row() { # binary, bench args...
    local bin=$1; shift
    $bin bench "$@" --iters 20 --ceiling-mib 1024 2>&1 | grep -E '^\| linear|check|rror' | tr '\n' ' ' || true
    echo
}
three() { # label, bench args (svec0 only for the backward)
    local label=$1; shift
    echo -n "new $label: "; row .gl/bin/etvk "$@"
    echo -n "old $label: "; row .gl/bin/etvk-old "$@"
    case "$1" in *backward) echo -n "svec0 $label: "; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_svec0 row .gl/bin/etvk "$@" ;; esac
}
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    echo "== q4_tests"; q4_tests
    for shape in "8192 8192" "28672 8192" "8192 28672" "4096 4096" "2048 8192" "8192 2048" "8192 8192"; do
        set -- $shape
        three "bwd M=1 N=$1 K=$2" linear_q4gsw_backward --m 1 --n $1 --k $2
    done
    for shape in "4096 4096" "2048 8192"; do
        set -- $shape
        three "fwd M=1 N=$1 K=$2" linear_q4gsw --m 1 --n $1 --k $2
    done
    three "bwd M=2 8192^2" linear_q4gsw_backward --m 2 --n 8192 --k 8192
    three "bwd M=512 8192^2" linear_q4gsw_backward --m 512 --n 8192 --k 8192
    for m in 2 4 8; do three "fwd M=$m 8192^2 (persistent)" linear_q4gsw --m $m --n 8192 --k 8192; done
    for m in 2 4; do three "fwd M=$m N=8192 K=5120" linear_q4gsw --m $m --n 8192 --k 5120; done
    three "fwd M=4 N=8192 K=2048" linear_q4gsw --m 4 --n 8192 --k 2048
    ETVK_Q4_MMA=off three "portable fwd M=8 8192^2" linear_q4gsw --m 8 --n 8192 --k 8192
} 2>&1 | tee "$OUT/s22-fourth.txt"
