#!/usr/bin/env bash
# Session 16, run 4: the wide backward's last workgroup per column block found by reading the
# counter first (built: it keeps its own partial sums in shared memory, no store and fence of
# its own before the final sum) against every workgroup publishing first (-DEARLY=0, by
# override), M = 1 and 2; the q4_linear tests natively.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s16-fourth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s16-fourth.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    d=.gl/ovr_e0; mkdir -p $d
    for cw in 8 16 32; do
        glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders -DMT=1 -DUR=2 -DPREFETCH=1 \
            -DCW=$cw -DEARLY=0 -o $d/q4_linear_bwd_wide_m1_c$cw.spv shaders/q4_linear_bwd_wide.comp
        glslc --target-env=vulkan1.2 -fshader-stage=compute -O -I shaders -DMT=2 -DCW=$cw -DEARLY=0 \
            -o $d/q4_linear_bwd_wide_m2_c$cw.spv shaders/q4_linear_bwd_wide.comp
    done
    cp docs/experiments/run-s16-fourth.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
{
    $e bench linear_q4gsw_backward --m 32 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    q4_tests
    for r in 1 2 3; do
        for s in "8192 8192" "28672 8192" "8192 28672"; do
            set -- $s
            for m in 1 2; do
                [ "$r" = 3 ] && [ "$1$2" != 81928192 ] && continue
                echo -n "early #$r M=$m N=$1 K=$2: "; bench_row linear_q4gsw_backward --m $m --n $1 --k $2
                echo -n "publish #$r M=$m N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_e0 bench_row linear_q4gsw_backward --m $m --n $1 --k $2
            done
        done
        echo -n "fwd #$r M=1 N=8192: "; bench_row linear_q4gsw --m 1 --n 8192 --k 8192
    done
} 2>&1 | tee "$OUT/s16-fourth.txt"
