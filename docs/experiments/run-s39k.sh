#!/usr/bin/env bash
# Session 39 (prepared; run in session 40 as its eighth device run, with the build below): to build `q4_linear_cm2` with the weight
# read in 1 x 32 blocks and each step's scales staged in shared memory (run 12: 45.8-46.3
# TFLOP/s against 38.7-38.8, bench checks passing at two shapes), set its line in
# scripts/build-spv.sh to `MODE=2 BLK32=1 SHSCALE=1`, rebuild, and run this: its GPU test
# (cm2_forward_matches_f64_reference: partial tiles, groups of 32 / 64 / one per row, bias,
# K short of the packed rows) and its bench rows at M = 128 / 512 / 2048.
# Here:   bash docs/experiments/run-s39k.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s39k.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_carry_bins
    cargo test --release -p etvk-runtime --test q4_linear --no-run
    cp "$(ls -t target/release/deps/q4_linear-* | grep -v '\.d$' | head -1)" .gl/bin/
    strip .gl/bin/q4_linear-*
    gzip -9 -f .gl/bin/q4_linear-*
}
exp_begin "$0" "$@"
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    for t in .gl/bin/q4_linear-*; do
        timeout 200 "$t" --test-threads=2 cm2 f16_tensor_core 2>&1 | grep -E '^test |test result|panicked' || true
    done
    for mm in 128 512 2048; do
        for e in on cm2; do
            echo -n "$e M=$mm 8192^2: "
            ETVK_Q4_MMA=$e exp_q4_row --m $mm --n 8192 --k 8192
        done
    done
} 2>&1 | tee "$OUT/s39k.txt"
