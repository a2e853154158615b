#!/usr/bin/env bash
# Session 13, run 1: where the M = 32 tensor-core backward's time goes, and the fp16 MMA
# rates through the driver. `etvk bench alu` (new f16 probes: the plain MMA, the backward's
# three-MMA fragment pair, and the pair with its operands from shared memory), then
# q4_linear_bwd_mma_t32x128[_split] variants by ETVK_SPIRV_OVERRIDE_DIR (switches in the
# shader: HOIST, DYVEC, DIAG_NOPRO, DIAG_NOAFILL) at M = 32 over the three shapes, beside the
# forward.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s13-bwd.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s13-bwd.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
VARIANTS="base: hoist:-DHOIST=1 dyvec:-DDYVEC=1 hd:-DHOIST=1+-DDYVEC=1 nopro:-DDIAG_NOPRO=1 noafill:-DDIAG_NOAFILL=1 hdnopro:-DHOIST=1+-DDYVEC=1+-DDIAG_NOPRO=1 hdnn:-DHOIST=1+-DDYVEC=1+-DDIAG_NOPRO=1+-DDIAG_NOAFILL=1"
if [ "${1:-}" = "prepare" ]; then
    c="glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders"
    for v in $VARIANTS; do
        n=${v%%:*}; f=${v#*:}; f=${f//+/ }
        mkdir -p .gl/exp13/$n
        for t in "t32x128:" "t32x128_split:-DSPLIT=1"; do
            # shellcheck disable=SC2086
            $c $f -DBM=32 ${t#*:} -o .gl/exp13/$n/q4_linear_bwd_mma_${t%%:*}.spv shaders/q4_linear_bwd_mma.comp
        done
    done
    cp docs/experiments/run-s13-bwd.sh .gl/run-s13-bwd.sh
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
row() {
    $e bench "$@" --iters 20 --ceiling-mib 1024 2>&1 |
        grep -E '^\| linear|check|rror|warn' | tr '\n' ' ' | sed 's/.*check/check/' || true
    echo
}
{
    nvidia-smi --query-gpu=clocks.sm,power.draw,clocks_throttle_reasons.active --format=csv || true
    $e bench alu --rounds 1024 --iters 10 2>&1 || true
    $e bench linear_q4gsw_backward --m 32 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for s in "32 8192 8192" "32 28672 8192" "32 8192 28672"; do
        set -- $s
        echo -n "forward M=$1 N=$2 K=$3: "; row linear_q4gsw --m $1 --n $2 --k $3
        echo -n "built M=$1 N=$2 K=$3: "; ETVK_PIPELINE_STATS=1 row linear_q4gsw_backward --m $1 --n $2 --k $3
        for v in $VARIANTS; do
            n=${v%%:*}
            echo -n "$n M=$1 N=$2 K=$3: "
            ETVK_SPIRV_OVERRIDE_DIR=$PWD/.gl/exp13/$n ETVK_PIPELINE_STATS=1 row linear_q4gsw_backward --m $1 --n $2 --k $3
        done
    done
    for i in 1 2 3; do
        echo -n "gemv #$i: "; row linear_q4gsw --m 1 --n 8192 --k 8192
        echo -n "bwd m1 #$i: "; row linear_q4gsw_backward --m 1 --n 8192 --k 8192
    done
    nvidia-smi --query-gpu=clocks.sm,power.draw,clocks_throttle_reasons.active --format=csv || true
} 2>&1 | tee "$OUT/s13-run1.txt"
