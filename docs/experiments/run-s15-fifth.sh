#!/usr/bin/env bash
# Session 15, run 5: the codes forward's scales read as one 8-byte pair per fragment (-DPAIRCOL=1,
# assuming an H200's accumulator layout: elements (0, 1) and (2, 3) on columns (c, c + 1))
# instead of one float per element, by override, against the built kernel; M = 512 / 2048,
# fp32 and fp16 x.
# Here:   (with .gl/bin/etvk from scripts/device-bench.sh prepare)
#         bash docs/experiments/run-s15-fifth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s15-fifth.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    mkdir -p .gl/ovr_pair
    for v in "q4_linear_fwd_mma_c_t128:" "q4_linear_fwd_mma_c_x16_t128:-DX16=1"; do
        n=${v%%:*}; d=${v#*:}
        # shellcheck disable=SC2086
        glslc --target-env=vulkan1.2 -fshader-stage=compute -I shaders -DFORWARD=1 -DCODES=1 \
            -DBM=128 -DPAIRCOL=1 $d -o .gl/ovr_pair/$n.spv shaders/q4_linear_bwd_mma.comp
    done
    cp docs/experiments/run-s15-fifth.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
{
    $e bench linear_q4gsw_backward --m 32 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for r in 1 2; do
        for m in 512 2048; do
            for s in "8192 8192" "28672 8192" "8192 28672"; do
                set -- $s
                echo -n "built #$r M=$m N=$1 K=$2: "; bench_row linear_q4gsw --m $m --n $1 --k $2
                echo -n "pair #$r M=$m N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_pair bench_row linear_q4gsw --m $m --n $1 --k $2
            done
        done
    done
    for s in "8192 8192" "28672 8192"; do
        set -- $s
        echo -n "built x16 M=512 N=$1 K=$2: "; bench_row linear_q4gsw --m 512 --n $1 --k $2 --x-f16
        echo -n "pair x16 M=512 N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_pair bench_row linear_q4gsw --m 512 --n $1 --k $2 --x-f16
    done
} 2>&1 | tee "$OUT/s15-fifth.txt"
