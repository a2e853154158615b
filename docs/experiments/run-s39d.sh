#!/usr/bin/env bash
# Session 39, fourth run: the GPU tests after this session's changes (the instance now asks
# for Vulkan 1.3 where the loader has it and a device with VK_NV_cooperative_matrix2 gets it,
# KHR cooperative matrices and bufferDeviceAddress enabled): the whole q4_linear test binary
# (its new cm2_forward_matches_f64_reference runs `q4_linear_cm2` there), the attention and
# KV-cache op tests (split keys now on by default) with validation on, and the fixtures.
# Here:   bash docs/experiments/run-s39d.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s39d.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    rm -rf .gl/bin/* .gl/ovr_* .gl/models .gl/run-s3*.sh
    mkdir -p .gl/bin
    cargo test --release -p etvk-runtime --test q4_linear --no-run
    cp "$(ls -t target/release/deps/q4_linear-* | grep -v '\.d$' | head -1)" .gl/bin/
    exp_test_binary ops
    cp target/release/etvk target/release/libetvk.so .gl/bin/
    strip .gl/bin/*
    gzip -9 -f .gl/bin/*
    cp target/keep/vulkan-validationlayers_*.deb .gl/
    cp scripts/device-env.sh scripts/experiment.sh .gl/
}
exp_begin "$0" "$@"
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    echo "== q4_linear tests"
    for t in .gl/bin/q4_linear-*; do
        timeout 300 "$t" --test-threads=2 2>&1 | grep -v ' \.\.\. ok$' | tail -30 || true
    done
    echo "== attention / KV-cache op tests"
    for t in .gl/bin/ops-*; do
        timeout 200 "$t" --test-threads=2 attention kv 2>&1 | grep -v ' \.\.\. ok$' | tail -30 || true
    done
    echo "== fixtures on this GPU"
    # shellcheck disable=SC2046
    timeout 300 .gl/bin/etvk check $(for d in tests/fixtures/*/; do [ -f "$d/io.json" ] && echo "$d"; done) 2>&1 | tail -1
} 2>&1 | tee "$OUT/s39d.txt"
