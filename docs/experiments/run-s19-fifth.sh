#!/usr/bin/env bash
# Session 19, run 5: why the built touch variant (q4_linear_bwd_wide_f16t_m1_*, 20.6-20.8 us
# at 8192^2 in run 4) lost run 3's 19.2-19.3 (`dpf`). Overrides of the f16t variants:
# dpfx = run 3's shader (unpackHalf2x16 decode, local size fixed at 320 in the SPIR-V),
# uhspec = the built shader with unpackHalf2x16 (local size by specialization, as built),
# f16x = the built decode (fp16 type + conversion) with the fixed local size, uhx = both;
# uh16 = the f16 (no touch) variants with unpackHalf2x16, on the long shapes.
# The sources: /tmp copies made by hand in session 19 (see the journal); not reproducible
# from the tree without them.
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cp docs/experiments/run-s19-fifth.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for v in dpfx uhspec f16x uhx uh16; do
        ETVK_PIPELINE_STATS=1 ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v .gl/bin/etvk bench linear_q4gsw_backward \
            --m 1 --n 8192 --k $( [ $v = uh16 ] && echo 28672 || echo 8192 ) --iters 1 --ceiling-mib 64 2>&1 |
            grep -E "stats.*wide" | head -1 | sed -E "s/^.*stats (\S+) .*Register Count=([0-9]+).*/$v \1 regs \2/" || true
    done
    ETVK_PIPELINE_STATS=1 .gl/bin/etvk bench linear_q4gsw_backward --m 1 --n 8192 --k 8192 --iters 1 --ceiling-mib 64 2>&1 |
        grep -E "stats.*wide" | head -1 | sed -E "s/^.*stats (\S+) .*Register Count=([0-9]+).*/built \1 regs \2/" || true
    for rep in 1 2; do
        for v in built dpfx uhspec f16x uhx; do
            d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
            echo -n "$v bwd M=1 8192^2: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw_backward --m 1 --n 8192 --k 8192
        done
    done
    echo -n "fwd M=1 8192^2: "; bench_row linear_q4gsw --m 1 --n 8192 --k 8192
    for shape in "28672 8192" "8192 28672"; do
        set -- $shape
        for v in built uh16 built; do
            d=.gl/ovr_$v; [ "$v" = built ] && d=/nonexistent
            echo -n "$v bwd M=1 N=$1 K=$2: "; ETVK_SPIRV_OVERRIDE_DIR=$d bench_row linear_q4gsw_backward --m 1 --n $1 --k $2
        done
    done
} 2>&1 | tee "$OUT/s19-fifth.txt"
