#!/usr/bin/env bash
# Session 41, first run: the M = 1 half GEMV over rows of 257..512 chunks in one workgroup
# of up to 1024 invocations per SM (select::half_gemv_max_chunks) instead of slices of at
# most 256 chunks whose workgroups add each other's sums after a ticket. One binary: the
# earlier geometry by ETVK_Q4_HALF_MAX_CHUNKS=256 ("old"), the new one by default ("new"),
# two interleaved rounds against each row's 2-GiB read ceiling; 8192^2 (unsliced either
# way) as the control; registers of the wide workgroups (ETVK_PIPELINE_STATS); then the
# GPU tests of the half / sliced GEMVs and of the 8da4w DQ forms that now run unsliced.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s41a.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s41a.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_carry_tests
}
exp_begin "$0" "$@"
SHAPES=("8192 8192" "4096 14336" "8192 14336" "4096 11008" "8192 8448" "8192 12288"
    "8192 16384" "8192 28672")
{
    exp_header
    for round in 1 2; do
        for shape in "${SHAPES[@]}"; do
            read -r n k <<<"$shape"
            echo -n "r$round old N=$n K=$k: "
            ETVK_Q4_HALF_MAX_CHUNKS=256 exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
            echo -n "r$round new N=$n K=$k: "
            exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
        done
        for b in old new; do
            cap=512
            [ "$b" = old ] && cap=256
            echo -n "r$round $b qcs4w N=4096 K=14336: "
            ETVK_Q4_HALF_MAX_CHUNKS=$cap exp_row2g linear_qcs4w --m 1 --n 4096 --k 14336
            echo -n "r$round $b dq8ca N=4096 K=14336: "
            ETVK_Q4_HALF_MAX_CHUNKS=$cap exp_row2g linear_dq8ca_q4gsw --m 1 --n 4096 --k 14336
            echo -n "r$round $b dq8ca silu N=4096 K=14336: "
            ETVK_Q4_HALF_MAX_CHUNKS=$cap exp_row2g linear_dq8ca_q4gsw --m 1 --n 4096 --k 14336 \
                --x-from silu
        done
    done
    echo "== registers"
    for k in 14336 16384; do
        ETVK_PIPELINE_STATS=1 .gl/bin/etvk bench linear_q4gsw --m 1 --n 4096 --k $k --iters 3 \
            --ceiling-mib 64 2>&1 | grep -iE "gemv_half|regist" | head -4
        ETVK_PIPELINE_STATS=1 .gl/bin/etvk bench linear_dq8ca_q4gsw --m 1 --n 4096 --k $k \
            --x-from silu --iters 3 --ceiling-mib 64 2>&1 | grep -iE "gemv_half|regist" | head -4
    done
    echo "== q4_linear tests (half / sliced)"
    for t in .gl/bin/q4_linear-*; do
        timeout 200 "$t" --test-threads=2 half sliced gemv 2>&1 | grep -v ' \.\.\. ok$' | tail -20 || true
    done
    echo "== 8da4w op tests"
    for t in .gl/bin/ops-*; do
        timeout 200 "$t" --test-threads=2 quantize act_quant norm_writes rms_norm_runs \
            gated_silu_runs_inside 2>&1 | grep -v ' \.\.\. ok$' | tail -20 || true
    done
} 2>&1 | tee "$OUT/s41a.txt"
