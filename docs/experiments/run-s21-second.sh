#!/usr/bin/env bash
# Session 21, run 2: the half GEMV's instruction count and memory skeleton at 8192^2.
# Variants of shaders/q4_linear_gemv_half.comp by override (docs/experiments/q4_linear_gemv_half-s21.diff):
#   chain    CHAIN = 1: dot products accumulated one after another, the -8's sum as the
#            last limb chain's start (one integer op less per row)
#   fastidx  FASTIDX = 1: whole batches inside N address rows from one base (no clamp per row)
#   cf       both
#   nodot / nodotpf3: run 1's no-dot-product diagnostic, and with PF3 (two batches in flight)
#   now / nowcf: run 1's no-weight-load diagnostic, and with CHAIN + FASTIDX
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s21-second.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s21-second.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    s21=$(mktemp -d); cp -r shaders "$s21/"
    (cd "$s21" && patch -s -p1 < "$OLDPWD/docs/experiments/q4_linear_gemv_half-s21.diff")
    comp() { # name, defines...
        local d=.gl/ovr_$1; shift; rm -rf "$d"; mkdir -p "$d"
        glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I "$s21/shaders" -DNT=512 "$@" \
            -o "$d/q4_linear_gemv_half_n512.spv" "$s21/shaders/q4_linear_gemv_half.comp"
        glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I "$s21/shaders" -DNT=512 -DSLICED=1 "$@" \
            -o "$d/q4_linear_gemv_half_sliced_n512.spv" "$s21/shaders/q4_linear_gemv_half.comp"
    }
    comp chain -DCHAIN=1; comp fastidx -DFASTIDX=1; comp cf -DCHAIN=1 -DFASTIDX=1
    comp nodot -DDIAG_NODOT=1; comp nodotpf3 -DDIAG_NODOT=1 -DPF3=1
    comp now -DDIAG_NOW=1; comp nowcf -DDIAG_NOW=1 -DCHAIN=1 -DFASTIDX=1
    rm -rf "$s21"
    cp docs/experiments/run-s21-second.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
vs="built chain fastidx cf nodot nodotpf3 now nowcf"
ovr() { if [ "$1" = built ]; then echo /nonexistent; else echo .gl/ovr_$1; fi; }
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for v in $vs; do
        ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=$(ovr $v) .gl/bin/etvk bench linear_q4gsw \
            --m 1 --n 8192 --k 8192 --iters 1 --ceiling-mib 64 2>&1 |
            grep -E "stats.*half" | head -1 | sed -E "s/^.*stats (\S+) .*Register Count=([0-9]+).*/$v \1 regs \2/" || true
    done
    for shape in "8192 8192" "64 8192" "28672 8192" "8192 8192" "8192 28672"; do
        set -- $shape
        for v in $vs; do
            echo -n "$v fwd M=1 N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=$(ovr $v) bench_row linear_q4gsw --m 1 --n $1 --k $2
        done
    done
    for v in nodot built; do
        echo -n "$v wgs=396 fwd M=1 8192^2: "
        ETVK_Q4_WIDE_WGS=396 ETVK_SPIRV_OVERRIDE_DIR=$(ovr $v) bench_row linear_q4gsw --m 1 --n 8192 --k 8192
    done
    for v in built chain fastidx cf; do
        echo -n "$v qcs4w M=1 8192^2: "; ETVK_SPIRV_OVERRIDE_DIR=$(ovr $v) bench_row linear_qcs4w --m 1 --n 8192 --k 8192
    done
    for v in chain fastidx cf; do
        echo "== q4_tests $v"; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v q4_tests gemv
    done
} 2>&1 | tee "$OUT/s21-second.txt"
