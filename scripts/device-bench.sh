#!/usr/bin/env bash
# Two halves of an H200 benchmark run (docs/performance.md, "Running on the H200").
#   scripts/device-bench.sh prepare   # here: release build + Vulkan loader into .gl/ (git-ignored)
#   .gl/device-bench.sh               # there (device tool, carry [".gl"]): the full table to $OUT
#   SMALL_M=1 .gl/device-bench.sh     # there: M = 1..8 only, forward and every backward form
#                                     # (default, split-N, staged) side by side, to $OUT/small-m.txt
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "prepare" ]; then
    cargo build --release -p etvk-cli -p etvk-ffi
    # The q4_linear tests too (experiment scripts run them there: q4_tests in device-env.sh).
    cargo test --release -p etvk-runtime --test q4_linear --no-run
    mkdir -p .gl/bin
    rm -f .gl/bin/q4_linear-*
    cp "$(ls -t target/release/deps/q4_linear-* | grep -v '\.d$' | head -1)" .gl/bin/
    cp ../shared/device/libvulkan1_*.deb .gl/
    # The NVIDIA ICD (libGLX_nvidia) needs glvnd, which the lent machine lacks; the tests
    # force validation on, and it has no validation layer either.
    (cd .gl && for p in libglvnd0 libglx0 libgl1 libegl1 libgles2 libopengl0 \
        vulkan-validationlayers; do
        ls ${p}_*.deb >/dev/null 2>&1 || apt-get download -qq "$p"; done)
    cp target/release/etvk target/release/libetvk.so .gl/bin/
    cp scripts/device-bench.sh .gl/device-bench.sh
    cp scripts/device-env.sh .gl/device-env.sh
    cp scripts/experiment.sh .gl/experiment.sh
    exit 0
fi
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
if ! .gl/bin/etvk devices >/dev/null 2>&1; then
    export VK_DRIVER_FILES=/usr/share/vulkan/icd.d/nvidia_icd.json
fi
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
etvk=.gl/bin/etvk
if [ "${SMALL_M:-}" = 1 ]; then
    # One line per bench: the kernels that ran and the table row.
    row() {
        $etvk bench "$@" --iters 20 --ceiling-mib 512 2>&1 | grep -E '^\| linear|kernels' |
            sed 's/.*kernels/kernels/' | tr '\n' ' ' || true
        echo
    }
    {
        $etvk bench read --ceiling-mib 2048 2>&1 | grep -E 'ceiling|u32|copy'
        for shape in "8192 8192" "28672 8192" "8192 28672" "4096 14336"; do
            set -- $shape
            for m in 1 2 3 4 8; do
                row linear_q4gsw --m $m --n $1 --k $2
                row linear_q4gsw_backward --m $m --n $1 --k $2
                if [ "$m" -ge 3 ]; then
                    ETVK_Q4_BWD=staged row linear_q4gsw_backward --m $m --n $1 --k $2
                fi
                if [ "$m" -ge 2 ]; then
                    ETVK_Q4_BWD=split row linear_q4gsw_backward --m $m --n $1 --k $2
                fi
            done
        done
    } 2>&1 | tee "$OUT/small-m.txt"
    exit 0
fi
{
    $etvk devices
    $etvk bench read
    for op in linear_q4gsw linear_q4gsw_backward linear_qcs4w; do
        for shape in "8192 8192" "28672 8192" "8192 28672"; do
            set -- $shape
            for m in 1 8 32 512 2048; do
                [ "${QUICK:-}" = 1 ] && [ "$m" != 1 ] && [ "$m" != 512 ] && continue
                $etvk bench $op --m $m --n $1 --k $2 --iters 20 --ceiling-mib 2048 2>&1 | grep -E '^\| linear|busy' || true
            done
        done
    done
    for numel in $((1 << 24)) $((1 << 26)); do
        $etvk bench adamw_step --numel $numel 2>&1 | tail -1 || true
    done
    $etvk bench lora_step --m 64 --k 4096 --n 4096 --rank 16 --iters 10 2>&1 | tail -1 || true
} 2>&1 | tee "$OUT/bench.txt"
