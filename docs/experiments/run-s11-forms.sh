#!/usr/bin/env bash
# Session 11, run 3: the tensor-core backward's MMA forms (MMA_FORM 1: three independent
# MMAs per fragment pair; 2: the two small ones chained, the large one apart; 0, built: one
# chain of three) and its split-K target (ETVK_Q4_BWD_MMA_WGS), at M = 32 mostly; nvidia-smi
# (another tenant on the GPU?) and the forward at M = 2048 three times (run 2: 17.1 .. 37.3 ms
# for one kernel at one shape).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s11-forms.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s11-forms.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    c="glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders"
    for f in 1 2; do
        mkdir -p .gl/exp/f$f
        for v in "t32x128:-DBM=32" "t32x128_split:-DBM=32 -DSPLIT=1" "t128:-DBM=128" "t128_split:-DBM=128 -DSPLIT=1"; do
            # shellcheck disable=SC2086
            $c ${v#*:} -DMMA_FORM=$f -o .gl/exp/f$f/q4_linear_bwd_mma_${v%%:*}.spv shaders/q4_linear_bwd_mma.comp
        done
    done
    cp docs/experiments/run-s11-forms.sh .gl/run-s11-forms.sh
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
{
    nvidia-smi || true
    nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv || true
    $e bench linear_q4gsw_backward --m 32 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for s in "32 8192 8192" "32 28672 8192" "32 8192 28672" "16 8192 8192" "64 8192 8192" "512 8192 8192"; do
        set -- $s
        for v in built f1 f2; do
            echo -n "$v M=$1 N=$2 K=$3: "
            if [ "$v" = built ]; then row --m $1 --n $2 --k $3
            else ETVK_SPIRV_OVERRIDE_DIR=$PWD/.gl/exp/$v row --m $1 --n $2 --k $3; fi
        done
    done
    for s in "32 8192 8192" "32 28672 8192" "32 8192 28672"; do
        set -- $s
        for w in 132 264 792 1056; do
            echo -n "wgs=$w M=$1 N=$2 K=$3: "; ETVK_Q4_BWD_MMA_WGS=$w row --m $1 --n $2 --k $3
        done
    done
    for i in 1 2 3; do
        for s in "2048 28672 8192" "2048 8192 28672"; do
            set -- $s
            echo -n "forward #$i M=$1 N=$2 K=$3: "
            $e bench linear_q4gsw --m $1 --n $2 --k $3 --iters 20 2>&1 | grep -E '^\| linear|rror' | tr '\n' ' ' || true
            echo
        done
        nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader || true
    done
    nvidia-smi || true
} 2>&1 | tee "$OUT/s11-forms.txt"
