#!/usr/bin/env bash
# Session 12, run 1: split-K slices of the tensor-core backward (32 x 128 tiles) swept at
# M = 32 and 64 over the three shapes, by ETVK_Q4_BWD_MMA_WGS = slices * tiles (slices above
# 4096 rows are still cut to 4096); then the full table (scripts/device-bench.sh) with the
# GPU's clocks, power and throttle reasons sampled every 100 ms beside it (session 11: the
# forward at M = 2048 took 17.1 ms in some processes and 30.9-37.3 ms in others).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s12-slices.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s12-slices.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cp docs/experiments/run-s12-slices.sh .gl/run-s12-slices.sh
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
row() {
    $e bench linear_q4gsw_backward "$@" --iters 20 2>&1 |
        grep -E '^\| linear|check|rror|warn' | tr '\n' ' ' | sed 's/.*check/check/' || true
    echo
}
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv -lms 100 >"$OUT/smi.csv" 2>&1 &
smi=$!
{
    nvidia-smi || true
    $e bench linear_q4gsw_backward --m 32 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    # M, N, K, column tiles of 128 x row tiles of 32, slices
    for s in "32 8192 8192 64 2 3 4 6 8" "32 28672 8192 64 7 8 10 12 14" \
        "32 8192 28672 224 2 3 4 5 6 8" "16 8192 8192 64 2 4 8" \
        "64 8192 8192 128 2 3 4 6 8" "64 28672 8192 128 7 8 12 16" "64 8192 28672 448 2 3 4 6"; do
        set -- $s
        m=$1 n=$2 k=$3 t=$4
        shift 4
        for sl in "$@"; do
            echo -n "slices=$sl M=$m N=$n K=$k: "
            ETVK_Q4_BWD_MMA_WGS=$((sl * t)) row --m $m --n $n --k $k
        done
        echo -n "default M=$m N=$n K=$k: "; row --m $m --n $n --k $k
    done
} 2>&1 | tee "$OUT/slices.txt"
echo "full table from $(date +%T)" >>"$OUT/slices.txt"
bash .gl/device-bench.sh || true
kill $smi || true
