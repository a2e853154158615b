#!/usr/bin/env bash
# Prepared in session 19, not run: where the half GEMV's fixed ~6.2 us go (journal, session
# 19: it streams at ~0.96 of the ceiling once running; a plain read's fixed part is ~4.2 us).
# Diagnostic variants (wrong results on purpose: the bench prints MISMATCH beside the time)
# from docs/experiments/q4_linear_gemv_half-diag.diff, applied to a copy of shaders/:
# nox = activations made from the invocation index (no x loads), nolimb = the loaded
# activations' bits used as limbs (no limb arithmetic), both. Session 5 measured these on the
# 256-invocation form (x loads 1.6 us, limbs 0.9), never on the half form.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s19-next.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s19-next.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    src=$(mktemp -d)
    cp -r shaders "$src/"
    (cd "$src" && patch -s -p1 < "$OLDPWD/docs/experiments/q4_linear_gemv_half-diag.diff")
    for v in nox:-DDIAG_NOX=1 nolimb:-DDIAG_NOLIMB=1 both:"-DDIAG_NOX=1 -DDIAG_NOLIMB=1"; do
        d=.gl/ovr_${v%%:*}; mkdir -p $d
        # shellcheck disable=SC2086
        glslc --target-env=vulkan1.2 -O -fshader-stage=compute -I "$src/shaders" -DNT=512 ${v#*:} \
            -o $d/q4_linear_gemv_half_n512.spv "$src/shaders/q4_linear_gemv_half.comp"
    done
    rm -rf "$src"
    cp docs/experiments/run-s19-next.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for shape in "64 8192" "2112 8192" "8192 8192" "28672 8192"; do
        set -- $shape
        for v in built nox nolimb both built; do
            d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
            echo -n "$v fwd M=1 N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw --m 1 --n $1 --k $2
        done
    done
} 2>&1 | tee "$OUT/s19-next.txt"
