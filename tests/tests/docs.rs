//! `docs/ops.md` must equal the rendering of `etvk_runtime::registered_ops()`;
//! `ETVK_BLESS=1` rewrites it.

use etvk_tests::ops_doc;

#[test]
fn ops_md_matches_the_registry() {
    let ops = etvk_runtime::registered_ops();
    assert!(
        !ops.is_empty(),
        "registered_ops() is empty: the registry failed to build"
    );
    let want = ops_doc::render(&ops);
    let path = ops_doc::path();
    if std::env::var("ETVK_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(&path, &want).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} is out of date with the op registry; regenerate it with `{}`",
        path.display(),
        ops_doc::REGENERATE
    );
}
