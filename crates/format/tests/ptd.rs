//! `.ptd` external data files: the v12 fixture's file (written by executorch 1.5.1's
//! exporter) parses, each blob's key is the sha256 of its bytes (how the exporter names
//! constants), and every named constant of the program's delegate is found once the file
//! is attached; damaged files are refused with errors, never a panic.
use etvk_format::ir::ConstantSource;
use etvk_format::program::parse_program;
use etvk_format::ptd::parse_ptd;
use etvk_format::vkgraph::parse_delegate;
use etvk_format::writer::named_key;
use std::path::{Path, PathBuf};

fn fixture() -> (PathBuf, PathBuf) {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/v12_external_constants");
    let ptd = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "ptd"))
        .expect("a .ptd file");
    (dir.join("model.pte"), ptd)
}

#[test]
fn exported_ptd_serves_the_delegate_constants() {
    let (pte, ptd_path) = fixture();
    let ptd = parse_ptd(std::fs::read(&ptd_path).unwrap()).unwrap();
    let keys: Vec<String> = ptd.keys().map(str::to_string).collect();
    assert!(keys.len() >= 10, "{keys:?}");
    for k in &keys {
        assert_eq!(&named_key(ptd.get(k).unwrap()), k, "blob {k}");
    }
    let mut program = parse_program(std::fs::read(&pte).unwrap()).unwrap();
    let plan = &program.plans[0];
    let blob = program.delegate_blob(&plan.delegates[0]).to_vec();
    let graph = parse_delegate(&blob).unwrap().graph;
    let named: Vec<(String, usize)> = graph
        .constants
        .iter()
        .filter_map(|c| match c {
            ConstantSource::Named { key, length } => Some((key.clone(), *length)),
            ConstantSource::Inline { .. } => None,
        })
        .collect();
    assert!(!named.is_empty());
    // Not in the program itself: only the attached file has them.
    assert!(named.iter().all(|(k, _)| program.named_data(k).is_none()));
    program.attach_external(ptd);
    for (k, len) in &named {
        let bytes = program
            .named_data(k)
            .unwrap_or_else(|| panic!("{k} missing"));
        assert!(bytes.len() >= *len, "{k}: {} < {len}", bytes.len());
    }
}

#[test]
fn damaged_ptd_files_are_refused() {
    let (_, ptd_path) = fixture();
    let good = std::fs::read(&ptd_path).unwrap();
    let mut cases: Vec<(Vec<u8>, &str)> = vec![
        (good[..20].to_vec(), "truncated"),
        (good[..good.len() - 100].to_vec(), "extends past end"),
    ];
    let mut bad_magic = good.clone();
    bad_magic[8..12].copy_from_slice(b"XX01");
    cases.push((bad_magic, "FH01"));
    let mut bad_id = good.clone();
    bad_id[4..8].copy_from_slice(b"ET12");
    cases.push((bad_id, "FT01"));
    let mut huge_base = good.clone();
    huge_base[32..40].copy_from_slice(&u64::MAX.to_le_bytes());
    cases.push((huge_base, "extends past end"));
    for (bytes, want) in cases {
        let err = parse_ptd(bytes).unwrap_err().to_string();
        assert!(err.contains(want), "{want}: {err}");
    }
    // Every single-byte corruption of the header and flatbuffer parses or fails cleanly.
    let word = |at: usize| u64::from_le_bytes(good[at..at + 8].try_into().unwrap()) as usize;
    let fb_end = word(16) + word(24);
    for i in 0..fb_end.min(good.len()) {
        let mut b = good.clone();
        b[i] ^= 0xA5;
        let _ = parse_ptd(b);
    }
}
