#!/usr/bin/env bash
# Session 22, run 3: the packed scales in row quads and the weights' rows padded to blocks of
# 8 (built in the working tree: every q4 kernel indexes the quads, the half GEMV loads a
# batch's four scales as one vec4 with no clamped rows), against the binary of the commit
# before (.gl/bin/etvk-old): the q4_linear tests natively, then each kernel family old / new.
# Here:   scripts/device-bench.sh prepare && cp OLD_ETVK .gl/bin/etvk-old &&
#         bash docs/experiments/run-s22-third.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s22-third.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cp docs/experiments/run-s22-third.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
row() { # binary, bench args...
    local bin=$1; shift
    $bin bench "$@" --iters 20 --ceiling-mib 1024 2>&1 | grep -E '^\| linear|check|rror' | tr '\n' ' ' || true
    echo
}
both() { # label, env..., -- bench args
    local label=$1; shift
    echo -n "new $label: "; row .gl/bin/etvk "$@"
    echo -n "old $label: "; row .gl/bin/etvk-old "$@"
}
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    echo "== q4_tests"; q4_tests
    for shape in "8192 8192" "28672 8192" "8192 28672" "4096 4096" "8192 2048" "8192 8192"; do
        set -- $shape
        both "fwd M=1 N=$1 K=$2" linear_q4gsw --m 1 --n $1 --k $2
    done
    both "qcs4w M=1 8192^2" linear_qcs4w --m 1 --n 8192 --k 8192
    both "qcs4w M=1 8192x28672" linear_qcs4w --m 1 --n 8192 --k 28672
    both "fwd M=2 N=8192 K=2048" linear_q4gsw --m 2 --n 8192 --k 2048
    both "fwd M=4 N=8192 K=8192" linear_q4gsw --m 4 --n 8192 --k 8192
    both "fwd M=2 N=8192 K=28672" linear_q4gsw --m 2 --n 8192 --k 28672
    for m in 8 32 512; do both "fwd M=$m 8192^2" linear_q4gsw --m $m --n 8192 --k 8192; done
    for m in 1 4 8 32 512; do both "bwd M=$m 8192^2" linear_q4gsw_backward --m $m --n 8192 --k 8192; done
    both "bwd M=1 N=28672 K=8192" linear_q4gsw_backward --m 1 --n 28672 --k 8192
    both "bwd M=1 N=8192 K=28672" linear_q4gsw_backward --m 1 --n 8192 --k 28672
    export ETVK_Q4_MMA=off
    both "portable fwd M=512 8192^2" linear_q4gsw --m 512 --n 8192 --k 8192
    both "portable bwd M=512 8192^2" linear_q4gsw_backward --m 512 --n 8192 --k 8192
    both "portable fwd M=8 8192^2" linear_q4gsw --m 8 --n 8192 --k 8192
} 2>&1 | tee "$OUT/s22-third.txt"
