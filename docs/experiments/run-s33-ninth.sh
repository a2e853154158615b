#!/usr/bin/env bash
# Session 33, run 10: the tests of this session's graph-level changes on a real GPU, where
# dispatches without a barrier between them do run at once: the op cases (fusions, slice_pos,
# views, the M = 4 FMA default through the q4 cases) and the barrier tests (sync validation
# over real exports and the training step). The fixtures ran through `etvk check` in runs
# 5-9; the binaries of the fixture and q4_linear tests would pass the 64 MiB carry.
# Not run in session 33 (no device time left); run in session 34 (H100), with the passing
# cases' lines left out.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s33-ninth.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s33-ninth.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    cargo test --release -p etvk-tests --test ops --test barriers --no-run
    rm -f .gl/bin/ops-* .gl/bin/barriers-* .gl/bin/fixtures-* .gl/bin/q4_linear-*
    for t in ops barriers; do
        cp "$(ls -t target/release/deps/$t-* | grep -v '\.d$' | head -1)" .gl/bin/
    done
}
exp_begin "$0" "$@"
{
    # The tests find the fixtures by the path they were built at.
    mkdir -p /work
    [ -e /work/main ] || ln -s "$(pwd)" /work/main
    for t in .gl/bin/ops-* .gl/bin/barriers-*; do
        echo "== $t"
        timeout 200 "$t" --test-threads=4 2>&1 | grep -vE ' \.\.\. ok$|^$|^running|^ok ' | head -60 || true
    done
} 2>&1 | tee "$OUT/s33-ninth.txt"
