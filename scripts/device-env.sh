# Sourced on the H200 (device tool, carry [".gl"]) by the experiment scripts in
# docs/experiments/: unpacks the Vulkan loader and glvnd that `scripts/device-bench.sh
# prepare` put in .gl/, points the loader at the NVIDIA ICD, and makes $OUT.
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done
ldconfig
# Binaries carried gzipped (to keep the working tree and .gl under the 64 MiB carry limit,
# as run-s37-second.sh packs them) are unpacked first.
for f in .gl/bin/*.gz; do
    [ -e "$f" ] || continue
    gzip -d -f "$f"
    chmod +x "${f%.gz}"
done
export VK_DRIVER_FILES=/usr/share/vulkan/icd.d/nvidia_icd.json
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"

# One bench on one line (experiment scripts): its node times (ETVK_BENCH_PROFILE), the check
# and kernels, and the table row. Usage: bench_row OP --m M --n N --k K
bench_row() {
    .gl/bin/etvk bench "$@" --iters 20 --ceiling-mib 1024 2>&1 |
        grep -E '^\| linear|check|rror|warn|  node' | tr '\n' ' ' || true
    echo
}

# The q4_linear tests natively (the binary `scripts/device-bench.sh prepare` copied), only
# what is not a passing test's line. Usage: q4_tests [FILTER]
q4_tests() {
    for t in .gl/bin/q4_linear-*; do
        timeout 150 "$t" --test-threads=2 "$@" 2>&1 | grep -v ' \.\.\. ok$' | head -40 || true
    done
}
