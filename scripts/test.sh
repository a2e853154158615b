#!/usr/bin/env bash
# The whole test suite: set-up, build, generated-code drift checks, every test under
# Vulkan validation layers, then fmt and clippy. Usage: scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
export PATH="$HOME/.cargo/bin:$HOME/.local/bin:$PATH"

start=$(date +%s)
echo "== build"
cargo build --workspace --all-targets
build_s=$(( $(date +%s) - start ))

echo "== generated code is current"
scripts/gen-flatbuffers.sh --check

echo "== tests (ETVK_VALIDATION=1: any validation error fails)"
export ETVK_VALIDATION=1
# One test at a time: every test makes its own Vulkan instance, and Debian 12's validation
# layer (1.3.239) once crashed inside itself (SIGSEGV in libVkLayer_khronos_validation.so,
# session 16's CI run) with two test threads each driving an instance under it. The suite
# takes ~35 s of test time this way on a 2-core machine.
export RUST_TEST_THREADS=1
cargo test --workspace --no-fail-fast

echo "== fmt, clippy"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings

echo "== done: build ${build_s}s, total $(( $(date +%s) - start ))s"
