#!/usr/bin/env bash
# Session 20, run 7: the sliced half GEMV with ROWTICKET = 1 (a ticket per row taken after
# the row's slice sum is written and read one block later; the last slice's workgroup adds
# the row) against the built end-of-set ticket, by override of q4_linear_gemv_half_sliced_n512.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s20-seventh.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s20-seventh.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    # The switch (and counters sized for a row each) live in
    # docs/experiments/q4_linear_gemv_half-sliced-rowticket.diff (applies to 7faa722): apply
    # it to the tree and rebuild before `scripts/device-bench.sh prepare`.
    d=.gl/ovr_rowticket; mkdir -p $d
    glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I shaders -DNT=512 -DSLICED=1 -DROWTICKET=1 \
        -o $d/q4_linear_gemv_half_sliced_n512.spv shaders/q4_linear_gemv_half.comp
    cp docs/experiments/run-s20-seventh.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_rowticket .gl/bin/etvk bench linear_q4gsw \
        --m 1 --n 8192 --k 28672 --iters 1 --ceiling-mib 64 2>&1 | grep -E "stats.*half" | head -1 |
        sed -E "s/^.*stats (\S+) .*Register Count=([0-9]+).*/rowticket \1 regs \2/" || true
    for shape in "8192 28672" "8192 16384" "4096 14336" "2048 28672" "8192 28672"; do
        set -- $shape
        for v in built rowticket; do
            d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
            echo -n "$v fwd M=1 N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw --m 1 --n $1 --k $2
        done
    done
    for v in built rowticket; do
        d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
        echo -n "$v qcs4w M=1 8192x28672: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_qcs4w --m 1 --n 8192 --k 28672
    done
    echo "sliced test with rowticket:"; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_rowticket q4_tests sliced
} 2>&1 | tee "$OUT/s20-seventh.txt"
