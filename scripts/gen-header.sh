#!/usr/bin/env bash
# Regenerate ffi/include/etvk.h from the Rust sources with cbindgen (ffi/cbindgen.toml).
#   scripts/gen-header.sh          write the header
#   scripts/gen-header.sh --check  fail if the checked-in header is out of date
# cbindgen runs as a library inside ffi/tests/header_drift.rs, so nothing else needs installing.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  "") ETVK_BLESS=1 cargo test -q -p etvk-ffi --test header_drift
      echo "wrote ffi/include/etvk.h" ;;
  --check) cargo test -q -p etvk-ffi --test header_drift ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac
