#!/usr/bin/env bash
# Session 51: the whole table at the current kernels on the lent card (device-bench.sh),
# then the portable path (ETVK_Q4_MMA=0) at M = 512, forward and backward.
# Here:   bash scripts/device-bench.sh prepare && gzip -f .gl/bin/* && cp docs/experiments/run-s51-table.sh .gl/
#         (device-env.sh unpacks the gzipped binaries there; the carry must stay under 64 MiB)
# There:  (device tool, carry [".gl"])  bash .gl/run-s51-table.sh
set -uo pipefail
. .gl/device-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/card.txt"
start=$(date +%s)
timeout 360 bash .gl/device-bench.sh > /dev/null 2>&1
echo "table rc=$? in $(( $(date +%s) - start )) s"
export VK_DRIVER_FILES=/usr/share/vulkan/icd.d/nvidia_icd.json
.gl/bin/etvk devices >/dev/null 2>&1 || true
{
    for shape in "8192 8192" "28672 8192" "8192 28672"; do
        set -- $shape
        for op in linear_q4gsw linear_q4gsw_backward; do
            ETVK_Q4_MMA=0 timeout 60 .gl/bin/etvk bench $op --m 512 --n $1 --k $2 --iters 20 \
                --ceiling-mib 2048 2>&1 | grep -E '^\| linear|kernels' | tr '\n' ' '
            echo
        done
    done
} 2>&1 | tee "$OUT/portable.txt"
echo "all in $(( $(date +%s) - start )) s"
cat "$OUT/bench.txt"
