#!/usr/bin/env bash
# Session 23, run 1: the M = 1 wide backward (8192^2: 19.5 us since the scales went to row
# quads, 19.1-19.2 before; backward / forward 0.79). Variants of
# shaders/q4_linear_bwd_wide.comp by override (the switches are in the shader):
#   t2   TOUCH = 2: touch invocations with fixed (row group, sector) items stepping down the
#        rows (an add, a min and a load per touch; the built loop divides each item index by
#        the sectors per row and branches between weight and scale touches)
#   q    PREFETCH = 2: a row quad per iteration, its scales and dy one vec4 each (the built
#        loop loads a vec2 of scales and two dy per two-row batch and indexes the quad each time)
#   t2q  both
# (q and t2q also replace the magic and plain fp16 M = 1 variants.) The built binary's
# kernels are the baseline; the candidate's q4_linear tests (.gl/bin/cand/, built with the
# manifest set to t2q) run first.
# Here:   sed the manifest to t2q, cargo test --release -p etvk-runtime --test q4_linear --no-run,
#         copy that test binary to .gl/bin/cand/; restore the manifest;
#         scripts/device-bench.sh prepare && bash docs/experiments/run-s23-first.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s23-first.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    comp() { # dir, variant, defines...
        local d=.gl/ovr_$1 v=$2; shift 2; mkdir -p "$d"
        glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders "$@" \
            -o "$d/$v.spv" shaders/q4_linear_bwd_wide.comp
    }
    rm -rf .gl/ovr_t2 .gl/ovr_q .gl/ovr_t2q
    for cw in 8 16 32; do
        f16t="-DMT=1 -DUR=2 -DDEC=1 -DNPF=64 -DCW=$cw"
        comp t2 q4_linear_bwd_wide_f16t_m1_c$cw $f16t -DPREFETCH=1 -DTOUCH=2
        comp q q4_linear_bwd_wide_f16t_m1_c$cw $f16t -DPREFETCH=2 -DTOUCH=1
        comp t2q q4_linear_bwd_wide_f16t_m1_c$cw $f16t -DPREFETCH=2 -DTOUCH=2
        for v in q t2q; do
            comp $v q4_linear_bwd_wide_f16_m1_c$cw -DMT=1 -DUR=2 -DDEC=1 -DCW=$cw -DPREFETCH=2
            comp $v q4_linear_bwd_wide_m1_c$cw -DMT=1 -DUR=2 -DCW=$cw -DPREFETCH=2
        done
    done
    cp docs/experiments/run-s23-first.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
vs="built t2 q t2q"
ovr() { if [ "$1" = built ]; then echo /nonexistent; else echo .gl/ovr_$1; fi; }
{
    echo "== candidate (t2q) q4_linear tests"
    for t in .gl/bin/cand/q4_linear-*; do
        timeout 150 "$t" --test-threads=2 2>&1 | grep -v ' \.\.\. ok$' | head -40 || true
    done
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for v in $vs; do
        ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=$(ovr $v) .gl/bin/etvk bench linear_q4gsw_backward \
            --m 1 --n 8192 --k 8192 --iters 1 --ceiling-mib 64 2>&1 |
            grep -E "stats.*bwd_wide" | head -1 | sed -E "s/^.*stats (\S+) .*Register Count=([0-9]+).*/$v \1 regs \2/" || true
    done
    echo -n "fwd M=1 8192^2: "; bench_row linear_q4gsw --m 1 --n 8192 --k 8192
    for shape in "8192 8192" "28672 8192" "8192 28672" "4096 4096" "2048 8192" "8192 2048" \
                 "14336 4096" "4096 14336" "8192 8192"; do
        set -- $shape
        for v in $vs; do
            echo -n "$v bwd M=1 N=$1 K=$2: "
            ETVK_SPIRV_OVERRIDE_DIR=$(ovr $v) bench_row linear_q4gsw_backward --m 1 --n $1 --k $2
        done
    done
    echo -n "fwd M=1 8192^2: "; bench_row linear_q4gsw --m 1 --n 8192 --k 8192
} 2>&1 | tee "$OUT/s23-first.txt"
