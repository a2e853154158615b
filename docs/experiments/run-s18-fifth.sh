#!/usr/bin/env bash
# Session 18, device run 6: the double-buffered portable tiles compiled with glslc -O (run 5's
# build without -O took 34-40 s to load: the driver's compile of the unoptimized SPIR-V) at
# M = 64 (64 x 64 tiles) against the previous build (.gl/bin_old), tensor cores off; load
# times at M = 512 (128 x 128 tiles).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s18-fifth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s18-fifth.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cp docs/experiments/run-s18-fifth.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
row() {  # row BINDIR OP ARGS...
    local b=$1; shift
    $b/etvk bench "$@" --iters 20 --ceiling-mib 512 2>&1 |
        grep -E '^\| linear|check|rror|warn' | tr '\n' ' ' || true
    echo
}
export ETVK_Q4_MMA=0
{
    for shape in "8192 8192 512" "8192 8192 64" "28672 8192 64" "8192 28672 64"; do
        set -- $shape
        for op in linear_q4gsw linear_q4gsw_backward; do
            for b in bin_old bin; do
                [ "$3" = 512 ] && [ "$b" = bin_old ] && continue
                echo -n "$b $op M=$3 N=$1 K=$2: "; row .gl/$b $op --m $3 --n $1 --k $2
            done
        done
    done
} 2>&1 | tee "$OUT/s18-fifth.txt"
