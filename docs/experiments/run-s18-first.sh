#!/usr/bin/env bash
# Session 18, run 1: the wide backward's slices summed by the workgroup with the last ticket
# (ARRIVE = 1: tickets taken at the start, sentinel slots written and taken by atomic
# exchanges, no fence) against the built last-to-finish form (binaries of the previous
# commit in .gl/bin_old), M = 1 and 2, two rounds; ARRIVE = 1 with DEC = 1 by override; the
# forward M = 1 for the ratio; registers; then every q4_linear test with the new binary.
# Here:   cp -r .gl/bin .gl/bin_old (at the old commit), then at the new one
#         scripts/device-bench.sh prepare && bash docs/experiments/run-s18-first.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s18-first.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    mkdir -p .gl/ovr_a1d1
    for cw in 8 16 32; do
        glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders -DMT=1 -DUR=2 -DPREFETCH=1 \
            -DARRIVE=1 -DCW=$cw -DDEC=1 -o .gl/ovr_a1d1/q4_linear_bwd_wide_m1_c$cw.spv shaders/q4_linear_bwd_wide.comp
    done
    cp docs/experiments/run-s18-first.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
row() {  # row BINDIR OP ARGS...
    local b=$1; shift
    $b/etvk bench "$@" --iters 20 --ceiling-mib 1024 2>&1 |
        grep -E '^\| linear|check|rror|warn' | tr '\n' ' ' || true
    echo
}
{
    .gl/bin/etvk bench linear_q4gsw_backward --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for m in 1 2; do
        for b in bin_old bin; do
            ETVK_PIPELINE_STATS=1 .gl/$b/etvk bench linear_q4gsw_backward --m $m --n 8192 --k 8192 --iters 3 2>&1 |
                grep -E "stats.*bwd_wide" | head -1 | sed "s/^/$b m$m: /" || true
        done
    done
    ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_a1d1 .gl/bin/etvk bench linear_q4gsw_backward --m 1 --n 8192 --k 8192 --iters 3 2>&1 |
        grep -E "stats.*bwd_wide" | head -1 | sed "s/^/a1d1: /" || true
    for r in 1 2; do
        for shape in "8192 8192" "28672 8192" "8192 28672" "4096 4096"; do
            set -- $shape
            echo -n "fwd N=$1 K=$2: "; row .gl/bin linear_q4gsw --m 1 --n $1 --k $2
            echo -n "old N=$1 K=$2: "; row .gl/bin_old linear_q4gsw_backward --m 1 --n $1 --k $2
            echo -n "new N=$1 K=$2: "; row .gl/bin linear_q4gsw_backward --m 1 --n $1 --k $2
            echo -n "a1d1 N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_a1d1 row .gl/bin linear_q4gsw_backward --m 1 --n $1 --k $2
        done
    done
    for shape in "8192 8192" "28672 8192" "8192 28672"; do
        set -- $shape
        echo -n "old m2 N=$1 K=$2: "; row .gl/bin_old linear_q4gsw_backward --m 2 --n $1 --k $2
        echo -n "new m2 N=$1 K=$2: "; row .gl/bin linear_q4gsw_backward --m 2 --n $1 --k $2
    done
    echo "== q4_linear tests (new)"
    q4_tests 2>&1 | tail -6
    echo "== wide tests with a1d1"
    ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_a1d1 q4_tests wide 2>&1 | tail -4
} 2>&1 | tee "$OUT/s18-first.txt"
