#!/usr/bin/env bash
# Session 16, run 7: the codes forward with one 8-byte scale load per fragment and the
# element-order guard (NaN out on another order; the codes form's own self-check), as built:
# the f16 q4_linear tests natively, M = 512 / 2048.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s16-seventh.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s16-seventh.sh
set -euo pipefail
here=$(dirname "$0")
case "$(basename "$(cd "$here" && pwd)")" in .gl) cd "$here/.." ;; *) cd "$here/../.." ;; esac
if [ "${1:-}" = "prepare" ]; then
    cp docs/experiments/run-s16-seventh.sh .gl/
    exit 0
fi
# shellcheck source=scripts/device-env.sh
. .gl/device-env.sh
e=.gl/bin/etvk
{
    q4_tests f16
    ETVK_PIPELINE_STATS=1 $e bench linear_q4gsw --m 512 --n 8192 --k 8192 --iters 3 2>&1 | grep -E "stats.*fwd_mma_c_t128" | head -1 || true
    echo -n "M=512 N=8192: "; bench_row linear_q4gsw --m 512 --n 8192 --k 8192
    echo -n "M=512 N=28672: "; bench_row linear_q4gsw --m 512 --n 28672 --k 8192
    echo -n "x16 M=512 N=8192: "; bench_row linear_q4gsw --m 512 --n 8192 --k 8192 --x-f16
    echo -n "M=2048 N=8192: "; bench_row linear_q4gsw --m 2048 --n 8192 --k 8192
    echo -n "qcs4w M=512 N=8192: "; bench_row linear_qcs4w --m 512 --n 8192 --k 8192
} 2>&1 | tee "$OUT/s16-seventh.txt"
