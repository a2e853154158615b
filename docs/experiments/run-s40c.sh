#!/usr/bin/env bash
# Session 40, third run: the staged backward (M = 3..8) with column blocks of 4-8 chunks that fill
# the wave where blocks of 8 leave SMs idle (select::staged_bwd_geometry), against
# session 39's binary (.gl/bin_old, 53d25a7); the forward at the same M for the ratio; the
# q4_linear GPU tests. The change is kept as docs/experiments/q4_linear_bwd_staged-s40-blocks.diff
# (apply with `git apply`, build, then prepare). Outcome (run 3, an H100): 3% slower where it
# applies; journal, session 40; not kept.
# Here:   bash docs/experiments/run-s40c.sh prepare   (after cp of 53d25a7's etvk to /tmp/bin_old)
# There:  (device tool, carry [".gl"])  bash .gl/run-s40c.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_carry_bins
    cargo test --release -p etvk-runtime --test q4_linear --no-run
    cp "$(ls -t target/release/deps/q4_linear-* | grep -v '\.d$' | head -1)" .gl/bin/q4_linear
    strip .gl/bin/q4_linear
    gzip -9 -f .gl/bin/q4_linear
    mkdir -p .gl/bin_old
    cp /tmp/bin_old/etvk .gl/bin_old/
    strip .gl/bin_old/etvk
    gzip -9 -f .gl/bin_old/etvk
    cp target/keep/vulkan-validationlayers_*.deb .gl/
}
exp_begin "$0" "$@"
gzip -d -f .gl/bin_old/etvk.gz && chmod +x .gl/bin_old/etvk
bwd() {
    timeout 60 "$1" bench linear_q4gsw_backward --m "$2" --n "$3" --k "$4" --iters 20 --ceiling-mib 512 2>&1 |
        grep -E 'check|^\| linear|rror' | sed 's/.*check/check/' | tr '\n' ' ' || true
    echo
}
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    for round in 1 2; do
        for shape in "8192 28672" "8192 8192" "28672 8192" "4096 14336" "14336 4096"; do
            read -r n k <<<"$shape"
            for m in 8 4; do
                echo -n "r$round old M=$m N=$n K=$k: "; bwd .gl/bin_old/etvk $m $n $k
                echo -n "r$round new M=$m N=$n K=$k: "; bwd .gl/bin/etvk $m $n $k
            done
        done
    done
    echo "== forward M = 8 / 4"
    for shape in "8192 28672" "8192 8192" "28672 8192"; do
        read -r n k <<<"$shape"
        for m in 8 4; do echo -n "fwd M=$m N=$n K=$k: "; exp_q4_row --m $m --n $n --k $k; done
    done
    echo "== q4_linear tests"
    timeout 300 .gl/bin/q4_linear --test-threads=2 2>&1 | grep -v ' \.\.\. ok$' | tail -30 || true
} 2>&1 | tee "$OUT/s40c.txt"
