#!/usr/bin/env bash
# Session 31's untimed change: the fault record (every execute's command buffer ends with an
# All -> Host barrier, execute reads 16 host-shared bytes after the fence, gather-type
# kernels bind one more buffer). A / B of whole executes against d13e08e (before it): the
# per-case times `etvk check` prints for small fixtures, five rounds each, old and new
# interleaved. Expected: no difference above the ~10 us print resolution.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s31-first.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s31-first.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    local old=/tmp/etvk-old
    [ -d "$old" ] || git worktree add -f "$old" d13e08e
    (cd "$old" && git checkout -q d13e08e && cargo build --release -p etvk-cli -p etvk-ffi)
    mkdir -p .gl/bin_old .gl/fixtures
    cp "$old/target/release/etvk" "$old/target/release/libetvk.so" .gl/bin_old/
    for f in e5_llama3_tiny_kvcache_fp32 e6_llama3_tiny_kvcache_8da4w v4_resnet_tiny i3_mask_index_mix; do
        cp -r "tests/fixtures/$f" .gl/fixtures/
    done
}
exp_begin "$0" "$@"
{
    for round in 1 2 3 4 5; do
        for bin in bin_old bin; do
            echo "== round $round $bin"
            .gl/$bin/etvk check .gl/fixtures/* 2>&1 | grep -o '^[a-z0-9_]* case [0-9]* out 0 .* ms' |
                sed 's/: max.*) / /' || true
        done
    done
} 2>&1 | tee "$OUT/s31-first.txt"
