#!/usr/bin/env bash
# The tensor-core tiled backward experiment (q4_linear_bwd_mma_tiled.comp) on the H200.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-bwd-mma.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-bwd-mma.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    mkdir -p .gl/exp/bwdmma .gl/exp/bwdmma-emu
    src=docs/experiments/q4_linear_bwd_mma_tiled.comp
    for v in "t128:" "t128_split:-DSPLIT=1" "t32x128:-DBM=32" "t32x128_split:-DBM=32 -DSPLIT=1"; do
        name=q4_linear_tiled_bwd_${v%%:*}
        # shellcheck disable=SC2086
        glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I shaders ${v#*:} \
            -o .gl/exp/bwdmma/$name.spv $src
        # shellcheck disable=SC2086
        glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I shaders ${v#*:} -DEMULATE=1 \
            -o .gl/exp/bwdmma-emu/$name.spv $src
        spirv-val --target-env vulkan1.2 .gl/exp/bwdmma/$name.spv
    done
    cp docs/experiments/run-bwd-mma.sh .gl/run-bwd-mma.sh
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
row() {
    $e bench linear_q4gsw_backward "$@" --iters 10 2>&1 |
        grep -E '^\| linear|check|rror' | tr '\n' ' ' | sed 's/.*check/check/' || true
    echo
}
{
    # The tensor-core probes (session 9): MMA alone, the forward's chunk, operands from
    # shared memory, A built from registers: which one the forward's next form should use.
    $e bench alu --rounds 1024 2>&1 | grep -i mma
    # Small first: wrong fragment offsets show as check MISMATCH here.
    for s in "32 128 256" "20 300 1024" "32 8192 8192" "512 8192 8192"; do
        set -- $s
        echo -n "mma M=$1 N=$2 K=$3: "
        ETVK_SPIRV_OVERRIDE_DIR=$PWD/.gl/exp/bwdmma row --m $1 --n $2 --k $3
    done
    for s in "32 8192 8192" "32 28672 8192" "32 8192 28672" "512 8192 8192" "512 28672 8192"; do
        set -- $s
        echo -n "mma M=$1 N=$2 K=$3: "
        ETVK_SPIRV_OVERRIDE_DIR=$PWD/.gl/exp/bwdmma row --m $1 --n $2 --k $3
        echo -n "default M=$1 N=$2 K=$3: "
        row --m $1 --n $2 --k $3
    done
    # The q4_linear tests (f64 references, every tiled-backward shape) through the override.
    for t in .gl/bin/q4_linear-*; do
        [ -x "$t" ] && ETVK_SPIRV_OVERRIDE_DIR=$PWD/.gl/exp/bwdmma "$t" --test-threads=1 2>&1 | tail -30
    done
} 2>&1 | tee "$OUT/bwd-mma.txt"
