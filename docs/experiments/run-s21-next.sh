#!/usr/bin/env bash
# Prepared in session 21, not run: the non-persistent int8 wide GEMV (M = 2..8 on rows of
# more than 256 chunks; M = 1 forced `wide_dp4` / `wide_dp4_pre`) with its workgroup fitted
# to the row (the chunks split into the fewest passes of <= 256, one invocation per chunk of
# a pass in whole subgroups: 224 at K = 14336 and 28672, 160 at 8448, 192 at 11008) against
# the fixed 256 (ETVK_Q4_WIDE_LOCAL=256 in the patched binary). The patch,
# docs/experiments/q4_linear_wide-fit.diff (made on 2d3ad82, applies after the review too;
# the 34 q4_linear tests pass with it on lavapipe), changes the shader and the runtime:
# prepare builds a second etvk.
# Prediction: M = 2 at 8192 x 28672 (~65 us) a few us faster, 8192 x 8448 (two passes of
# 160 instead of 256) more; M = 2..8 on 256-chunk multiples unchanged.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s21-next.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s21-next.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    tree=$(mktemp -d)/fit
    git worktree add -f "$tree" HEAD >/dev/null
    (cd "$tree" && git apply "$OLDPWD/docs/experiments/q4_linear_wide-fit.diff" &&
        CARGO_TARGET_DIR="$OLDPWD/target/fit" cargo build --release -p etvk-cli)
    cp target/fit/release/etvk .gl/bin/etvk-fit
    git worktree remove --force "$tree"
    cp docs/experiments/run-s21-next.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
row() { # binary, bench args...
    local bin=$1; shift
    $bin bench "$@" --iters 20 --ceiling-mib 1024 2>&1 | grep -E '^\| linear|check|rror' | tr '\n' ' ' || true
    echo
}
{
    .gl/bin/etvk bench linear_q4gsw --m 1 --n 8192 --k 8192 --iters 10 >/dev/null 2>&1 || true
    for shape in "8192 28672" "4096 14336" "4096 11008" "8192 8448" "8192 16384"; do
        set -- $shape
        for m in 2 4; do
            echo -n "fit fwd M=$m N=$1 K=$2: "; row .gl/bin/etvk-fit linear_q4gsw --m $m --n $1 --k $2
            echo -n "256 fwd M=$m N=$1 K=$2: "; ETVK_Q4_WIDE_LOCAL=256 row .gl/bin/etvk-fit linear_q4gsw --m $m --n $1 --k $2
            echo -n "built fwd M=$m N=$1 K=$2: "; row .gl/bin/etvk linear_q4gsw --m $m --n $1 --k $2
        done
    done
} 2>&1 | tee "$OUT/s21-next.txt"
