#!/usr/bin/env bash
# Session 22, run 5: the packed scales in row pairs ([R/2][G][2]; the working tree) against
# run 3-4's row quads ([R/4][G][4], .gl/bin/etvk-quad) and the commit before both
# (.gl/bin/etvk-old). Run 4: quads cost the wide backward at M = 1 (8192^2 19.1 -> 19.5 us,
# backward / forward 0.79): its two-row batches used half of each quad sector. Pairs keep a
# warp's lanes over groups on whole sectors and still vectorize (half GEMV: two vec2 per
# batch, backward: one).
# Here:   scripts/device-bench.sh prepare && cp OLD .gl/bin/etvk-old && cp QUAD .gl/bin/etvk-quad &&
#         bash docs/experiments/run-s22-fifth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s22-fifth.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cp docs/experiments/run-s22-fifth.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
row() { # binary, bench args...
    local bin=$1; shift
    $bin bench "$@" --iters 20 --ceiling-mib 1024 2>&1 | grep -E '^\| linear|check|rror' | tr '\n' ' ' || true
    echo
}
three() { # label, bench args
    local label=$1; shift
    echo -n "pair $label: "; row .gl/bin/etvk "$@"
    echo -n "quad $label: "; row .gl/bin/etvk-quad "$@"
    echo -n "old $label: "; row .gl/bin/etvk-old "$@"
}
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    echo "== q4_tests"; q4_tests
    for round in 1 2; do
        for op in linear_q4gsw linear_q4gsw_backward; do
            for shape in "8192 8192" "28672 8192" "8192 28672"; do
                set -- $shape
                three "$op M=1 N=$1 K=$2" $op --m 1 --n $1 --k $2
            done
        done
    done
    three "qcs4w M=1 8192^2" linear_qcs4w --m 1 --n 8192 --k 8192
    three "qcs4w M=1 N=8192 K=28672" linear_qcs4w --m 1 --n 8192 --k 28672
    three "fwd M=4 8192^2" linear_q4gsw --m 4 --n 8192 --k 8192
    three "fwd M=8 8192^2" linear_q4gsw --m 8 --n 8192 --k 8192
    three "bwd M=2 8192^2" linear_q4gsw_backward --m 2 --n 8192 --k 8192
    three "bwd M=512 8192^2" linear_q4gsw_backward --m 512 --n 8192 --k 8192
    ETVK_Q4_MMA=off three "portable fwd M=8 8192^2" linear_q4gsw --m 8 --n 8192 --k 8192
} 2>&1 | tee "$OUT/s22-fifth.txt"
