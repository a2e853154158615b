#!/usr/bin/env bash
# Session 22, run 6: the wide backward's touch invocations (f16t, M = 1) over the row-quad
# scales cost 0.3-0.4 us at 8192^2 (runs 4-5). By override (TOUCHS in
# shaders/q4_linear_bwd_wide.comp): t2 = the quad's sector address without the lane
# ((n & ~3) G + 4 g: fewer integer ops per touch), t0 = no scale touches at all; against
# the built quads and the commit before (.gl/bin/etvk-old).
# Here:   (the ovr_t0 / ovr_t2 SPIR-V compiled by hand, see the session-22 journal)
# There:  (device tool, carry [".gl"])  bash .gl/run-s22-sixth.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
. .gl/device-env.sh
row() { local bin=$1; shift
    $bin bench "$@" --iters 20 --ceiling-mib 1024 2>&1 | grep -E '^\| linear|check|rror' | tr '\n' ' ' || true; echo; }
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for shape in "8192 8192" "4096 4096" "2048 8192" "8192 8192"; do
        set -- $shape
        for v in quad t2 t0 old; do
            echo -n "$v bwd M=1 N=$1 K=$2: "
            case $v in
                quad) row .gl/bin/etvk linear_q4gsw_backward --m 1 --n $1 --k $2 ;;
                old) row .gl/bin/etvk-old linear_q4gsw_backward --m 1 --n $1 --k $2 ;;
                *) ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v row .gl/bin/etvk linear_q4gsw_backward --m 1 --n $1 --k $2 ;;
            esac
        done
    done
} 2>&1 | tee "$OUT/s22-sixth.txt"
