#!/usr/bin/env bash
# Coverage-guided fuzzing of what a damaged program reaches (fuzz/, cargo-fuzz on a nightly
# toolchain; not part of CI). Seeds are the fixtures: whole programs for `program`,
# `host_method` and `gpu_delegate`, their delegate blobs cut at the VH00 header's sizes for
# `delegate`.
#   bash scripts/fuzz.sh [TARGET ...]   (default: program delegate host_method gpu_delegate;
#                                        gpu_delegate needs a Vulkan device: lavapipe will do)
#   FUZZ_SECONDS=600 (per target)  FUZZ_DIR=/tmp/etvk-fuzz (corpora and crash artifacts)
# A finding is a file under $FUZZ_DIR/artifacts/TARGET; replay it with
#   cd fuzz && cargo +nightly fuzz run TARGET FILE
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${FUZZ_DIR:-/tmp/etvk-fuzz}
secs=${FUZZ_SECONDS:-600}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(program delegate host_method gpu_delegate)
export PATH="$HOME/.cargo/bin:$PATH"
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --version 0.13.2 --locked

seed() {
    mkdir -p "$dir"/corpus/{program,host_method,gpu_delegate,delegate}
    python3 - "$root/tests/fixtures" "$dir/corpus" <<'PY'
import os, struct, sys
fixtures, out = sys.argv[1], sys.argv[2]
for name in sorted(os.listdir(fixtures)):
    d = os.path.join(fixtures, name)
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        data = open(os.path.join(d, f), "rb").read()
        if f.endswith((".ptd", ".npy")):
            open(os.path.join(out, "program", f"{name}_{f}"), "wb").write(data)
        if not f.endswith(".pte") or len(data) > 320_000:
            continue
        for t in ("program", "host_method", "gpu_delegate"):
            open(os.path.join(out, t, f"{name}.pte"), "wb").write(data)
        at, k = data.find(b"VH00"), 0
        while at >= 4:
            # bytes_offset + bytes_size end the blob (the VH00 header: bytes_offset u32 at 18, bytes_size u64 at 22).
            off, size = struct.unpack_from("<IQ", data, at + 14)
            blob = data[at - 4 : at - 4 + off + size]
            open(os.path.join(out, "delegate", f"{name}_{k}"), "wb").write(blob)
            at, k = data.find(b"VH00", at + 4), k + 1
PY
}
seed
# A dictionary of the registry's op names (docs/ops.md, kept current by a test), so that
# mutations swap one op for another under the same arguments.
grep -o '^| `[^`]*`' "$root/docs/ops.md" | sed 's/^| `\(.*\)`$/"\1"/' > "$dir/ops.dict"
cd "$root/fuzz"
for t in "${targets[@]}"; do
    mkdir -p "$dir/artifacts/$t"
    echo "== $t: ${secs} s"
    # Programs may declare tensors of several GB, which the host allocates (fallibly):
    # the memory limits are set above such sizes so that only a real blow-up reports.
    # ASan's allocator returns null (an `Err` from the runtime's fallible allocations) where
    # the real one would, instead of aborting on sizes past its own cap.
    ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=0 \
        cargo +nightly fuzz run "$t" "$dir/corpus/$t" -- -max_len=400000 -timeout=20 \
        -rss_limit_mb=12000 -malloc_limit_mb=12000 -max_total_time="$secs" \
        -artifact_prefix="$dir/artifacts/$t/" -dict="$dir/ops.dict" -print_final_stats=1 2>&1 |
        grep -E '^(Done |stat::|==[0-9]+==|SUMMARY|thread|artifact)' || true
done
ls -R "$dir/artifacts"
