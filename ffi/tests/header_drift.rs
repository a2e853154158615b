//! `ffi/include/etvk.h` must be what cbindgen generates from the current sources.
//!
//! `ETVK_BLESS=1` rewrites the checked-in header instead of comparing (what
//! `scripts/gen-header.sh` does), so no separate cbindgen install is needed.

use std::path::{Path, PathBuf};

fn ffi_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Generate the header text in-process with `ffi/cbindgen.toml`.
fn generate() -> String {
    let dir = ffi_dir();
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml"))
        .unwrap_or_else(|e| panic!("reading ffi/cbindgen.toml: {e}"));
    let bindings = cbindgen::Builder::new()
        .with_crate(&dir)
        .with_config(config)
        .generate()
        .unwrap_or_else(|e| panic!("cbindgen failed: {e}"));
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("cbindgen output is UTF-8")
}

fn header_path() -> PathBuf {
    ffi_dir().join("include").join("etvk.h")
}

#[test]
fn header_matches_sources() {
    let generated = generate();
    let path = header_path();
    if std::env::var("ETVK_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(&path, &generated)
            .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    if current != generated {
        let first_diff = current
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| current.lines().count().min(generated.lines().count()));
        panic!(
            "{} is out of date (first difference at line {}); run scripts/gen-header.sh",
            display(&path),
            first_diff + 1
        );
    }
}

fn display(p: &Path) -> String {
    p.display().to_string()
}
