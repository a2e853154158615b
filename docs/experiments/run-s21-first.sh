#!/usr/bin/env bash
# Session 21, run 1: the half GEMV at 8192^2 (0.59 of the read ceiling, floor 0.60).
# Variants of shaders/q4_linear_gemv_half.comp by override (docs/experiments/q4_linear_gemv_half-s21.diff):
#   imm    IMM = 1: each row's partial stored to shared memory when made (no accumulators)
#   pf3    PF3 = 1: IMM + three batch register sets in rotation (two batches in flight)
#   imm16 / pf3r16: the same with blocks of 16 rows (half the barriers; 34 KiB of shared
#          memory: over lavapipe's 32 KiB, so untested there)
#   now    DIAG_NOW: no weight loads (weights from the row and lane; wrong results)
#   nodot  DIAG_NODOT: no dot products (the weights only consumed; wrong results)
# plus session 20's prepared question (sliced form at 256 workgroups: equal block sets).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s21-first.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s21-first.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    s21=$(mktemp -d); cp -r shaders "$s21/"
    (cd "$s21" && patch -s -p1 < "$OLDPWD/docs/experiments/q4_linear_gemv_half-s21.diff")
    comp() { # name, defines...
        local d=.gl/ovr_$1; shift; mkdir -p "$d"
        glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I "$s21/shaders" -DNT=512 "$@" \
            -o "$d/q4_linear_gemv_half_n512.spv" "$s21/shaders/q4_linear_gemv_half.comp"
        glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I "$s21/shaders" -DNT=512 -DSLICED=1 "$@" \
            -o "$d/q4_linear_gemv_half_sliced_n512.spv" "$s21/shaders/q4_linear_gemv_half.comp"
    }
    comp imm -DIMM=1; comp pf3 -DPF3=1; comp imm16 -DIMM=1 -DRW=16; comp pf3r16 -DPF3=1 -DRW=16; comp now -DDIAG_NOW=1; comp nodot -DDIAG_NODOT=1
    rm -rf "$s21"
    cp docs/experiments/run-s21-first.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
vs="built imm pf3 imm16 pf3r16 now nodot"
ovr() { if [ "$1" = built ]; then echo /nonexistent; else echo .gl/ovr_$1; fi; }
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for v in $vs; do
        for k in 8192 28672; do
            ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=$(ovr $v) .gl/bin/etvk bench linear_q4gsw \
                --m 1 --n 8192 --k $k --iters 1 --ceiling-mib 64 2>&1 |
                grep -E "stats.*half" | head -1 | sed -E "s/^.*stats (\S+) .*Register Count=([0-9]+).*/$v \1 regs \2/" || true
        done
    done
    for shape in "8192 8192" "64 8192" "2112 8192" "28672 8192" "8192 28672" "8192 8192"; do
        set -- $shape
        for v in $vs; do
            echo -n "$v fwd M=1 N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=$(ovr $v) bench_row linear_q4gsw --m 1 --n $1 --k $2
        done
    done
    for v in built imm pf3 imm16 pf3r16; do
        echo -n "$v fwd M=1 N=8192 K=16384: "; ETVK_SPIRV_OVERRIDE_DIR=$(ovr $v) bench_row linear_q4gsw --m 1 --n 8192 --k 16384
        echo -n "$v qcs4w M=1 8192^2: "; ETVK_SPIRV_OVERRIDE_DIR=$(ovr $v) bench_row linear_qcs4w --m 1 --n 8192 --k 8192
    done
    for shape in "8192 28672" "8192 16384"; do
        set -- $shape
        for w in 256 240; do
            echo -n "built wgs=$w fwd M=1 N=$1 K=$2: "
            ETVK_Q4_WIDE_WGS=$w bench_row linear_q4gsw --m 1 --n $1 --k $2
        done
    done
    for v in imm pf3 imm16 pf3r16; do
        echo "== q4_tests $v"; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v q4_tests gemv
    done
} 2>&1 | tee "$OUT/s21-first.txt"
