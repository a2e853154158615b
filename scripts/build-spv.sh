#!/usr/bin/env bash
# Compiles the shaders that Debian's glslc cannot (GL_NV_cooperative_matrix2) into
# shaders/spv/<variant>.spv, which is committed; the shader build reflects those files
# (manifest `spv=1`). Needs network access once (crates.io: the glslang crate, whose build
# compiles glslang's sources: ~2 minutes on 2 cores). Run after editing such a shader:
#   bash scripts/build-spv.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --quiet --manifest-path "$root/tools/glsl2spv/Cargo.toml"
tool="$root/tools/glsl2spv/target/release/glsl2spv"
mkdir -p "$root/shaders/spv"
# variant  source  defines...
while read -r name src defs; do
    [ -z "$name" ] && continue
    args=()
    for d in $defs; do args+=("-D$d"); done
    glslc -E "${args[@]}" -I "$root/shaders" "$root/shaders/$src" |
        "$tool" "$root/shaders/spv/$name.spv"
    echo "shaders/spv/$name.spv"
done <<'LIST'
q4_linear_cm2       q4_linear_cm2.comp MODE=2 BLK32=1 SHSCALE=1
q4_linear_cm2_f16   q4_linear_cm2.comp MODE=1 SHSCALE=1
LIST
