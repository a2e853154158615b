#!/usr/bin/env bash
# Session 18, device run 5: the build with the double-buffered portable tiles (t64, t128:
# DBUF = 1 without glslc -O) against the previous build's binaries (.gl/bin_old), tensor
# cores off: M = 64 (64 x 64 tiles, not timed before), M = 512 and 2048; then every q4_linear
# test with the new build (the tests run the portable kernels: tensor cores off by spec).
# Here:   cp -r .gl/bin .gl/bin_old (at the old commit), then at the new one
#         scripts/device-bench.sh prepare && bash docs/experiments/run-s18-fourth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s18-fourth.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cp docs/experiments/run-s18-fourth.sh .gl/
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
    echo "== q4_linear tests (new build)"
    q4_tests 2>&1 | tail -6
    export ETVK_Q4_MMA=0
    .gl/bin/etvk bench linear_q4gsw --m 512 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for shape in "8192 8192 64" "28672 8192 64" "8192 28672 64" "8192 8192 2048"; do
        set -- $shape
        for op in linear_q4gsw linear_q4gsw_backward; do
            [ "$3" = 2048 ] && [ "$op" = linear_q4gsw_backward ] && continue
            for b in bin_old bin; do
                echo -n "$b $op M=$3 N=$1 K=$2: "; row .gl/$b $op --m $3 --n $1 --k $2
            done
        done
    done
    for shape in "8192 8192" "28672 8192" "8192 28672"; do
        set -- $shape
        for op in linear_q4gsw linear_q4gsw_backward; do
            echo -n "bin $op M=512 N=$1 K=$2: "; row .gl/bin $op --m 512 --n $1 --k $2
        done
    done
} 2>&1 | tee "$OUT/s18-fourth.txt"
